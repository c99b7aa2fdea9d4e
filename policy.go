package retrybudget

// policy is what the calls of one Transport, or of one of its Routes,
// share: the Config with its defaults applied, the clock, the Route's name,
// the memory of recent give-ups and the key mint. A call reads its policy
// and never changes its Config.
type policy struct {
	cfg   Config
	clock clock
	// routeName names the Route this policy serves; empty for the
	// Transport's own.
	routeName string
	// noAction makes calls ignore the context's Action (Route.NoAction).
	noAction bool
	// gaveUp remembers recent give-ups, to answer an SDK's re-send of a
	// call already given up on without sending it.
	gaveUp giveUps
	// keys makes the keys of calls that carry none.
	keys keyMint
	// hedge is the hedging policy of cfg's Hedge fields and the latencies
	// it tracks; nil when hedging is off.
	hedge *hedging
}

// inherit fills the fields of a route's cfg that a route shares with its
// parent when left zero.
func inherit(cfg, parent Config) Config {
	cfg.Routes = nil
	if cfg.Base == nil {
		cfg.Base = parent.Base
	}
	if cfg.Observer.isZero() {
		cfg.Observer = parent.Observer
	}
	led, pled := &cfg.Ledger, parent.Ledger
	if led.Store == nil {
		led.Store = pled.Store
	}
	if led.Headers == nil {
		led.Headers = pled.Headers
	}
	if led.Owner == "" {
		led.Owner = pled.Owner
	}
	if led.Lease == 0 {
		led.Lease = pled.Lease
	}
	if led.Reconciler == nil {
		led.Reconciler = pled.Reconciler
	}
	if cfg.Limiter == nil {
		cfg.Limiter = parent.Limiter
	}
	if cfg.Boundary == nil {
		cfg.Boundary = parent.Boundary
	}
	if cfg.Budget == nil {
		cfg.Budget = parent.Budget
	}
	if cfg.Throttle == nil {
		cfg.Throttle = parent.Throttle
	}
	if cfg.Overload == nil {
		cfg.Overload = parent.Overload
	}
	return cfg
}

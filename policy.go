package retrybudget

// policy is what the calls of one Transport, or of one of its Routes,
// share: the Config with its defaults applied, the clock, the Route's name,
// the memory of recent give-ups, the key mint and the hedging state. A call
// reads its policy and never changes its Config.
type policy struct {
	cfg   Config
	clock clock
	// routeName names the Route this policy serves; empty for the
	// Transport's own.
	routeName string
	// noAction makes calls ignore the context's Action (Route.NoAction).
	noAction bool
	// safeActions makes safe methods carry the context's Action
	// (Route.ActionOnSafeMethods).
	safeActions bool
	// gaveUp remembers recent give-ups, to answer an SDK's re-send of a
	// call already given up on without sending it.
	gaveUp giveUps
	// keys makes the keys of calls that carry none.
	keys keyMint
	// hedge is the hedging policy of cfg's Hedge fields and the latencies
	// it tracks; nil when hedging is off.
	hedge *hedging
}

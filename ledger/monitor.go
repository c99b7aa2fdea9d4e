package ledger

import (
	"context"
	"sync"
	"time"
)

// DefaultMonitorEvery is how often a Monitor sweeps when
// MonitorConfig.Every is zero.
const DefaultMonitorEvery = time.Minute

// DefaultMonitorLimit caps the records one sweep reads when
// MonitorConfig.Limit is zero.
const DefaultMonitorLimit = 1000

// MonitorConfig configures Monitor. Store is required.
type MonitorConfig struct {
	// Store is the ledger to watch.
	Store Store
	// Every is the time between sweeps. Zero means DefaultMonitorEvery.
	Every time.Duration
	// Limit caps the stuck records one sweep reads (see Store.Sweep).
	// Zero means DefaultMonitorLimit.
	Limit int
	// Reconciler, when set, is run over every stuck record (Reconcile),
	// and its outcomes are reported. Nil means report only.
	Reconciler Reconciler
	// Owner names the reconciler in records. Zero means "monitor".
	Owner string
	// Report receives each sweep's SweepReport, from the Monitor's
	// goroutine: a retrybudget.Observer's Sweep field, so the Observer of
	// the Transport logs and measures sweeps too. Nil means discard
	// (useful only with a Reconciler).
	Report func(SweepReport)
}

// SweepReport is what one sweep found and did: the monitoring the design
// asks for of stuck operations and reconciliations.
type SweepReport struct {
	// Stuck is what Sweep listed: actions in progress whose lease ran
	// out, and uncertain actions.
	Stuck []Record
	// InProgress and Uncertain count Stuck by state.
	InProgress, Uncertain int
	// Reconciled is Reconcile's result for Stuck, when a Reconciler is
	// set.
	Reconciled []Reconciled
	// Err is Sweep's error. Stuck is then empty, except for an error
	// wrapping ErrCorrupt: Sweep skipped records it could not decode and
	// listed the rest.
	Err error
}

// ticker is the Monitor's timer seam: it returns a channel that fires
// every d and a function that stops it. Tests replace it with a channel
// they drive.
type ticker func(d time.Duration) (<-chan time.Time, func())

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Monitoring is a running Monitor. Call Stop.
type Monitoring struct {
	stop chan struct{} // closed by Stop
	done chan struct{} // closed when the goroutine has exited
	once sync.Once     // closes stop
}

// Monitor sweeps cfg.Store every cfg.Every until Stop or ctx ends, and
// reports each sweep (and, with a Reconciler, its reconciliations) to
// cfg.Report. The first sweep runs after one period.
func Monitor(ctx context.Context, cfg MonitorConfig) *Monitoring {
	return monitor(ctx, cfg, realTicker)
}

func monitor(ctx context.Context, cfg MonitorConfig, tick ticker) *Monitoring {
	if cfg.Every <= 0 {
		cfg.Every = DefaultMonitorEvery
	}
	if cfg.Limit <= 0 {
		cfg.Limit = DefaultMonitorLimit
	}
	if cfg.Owner == "" {
		cfg.Owner = "monitor"
	}
	m := &Monitoring{stop: make(chan struct{}), done: make(chan struct{})}
	c, stopTick := tick(cfg.Every)
	go func() {
		defer close(m.done)
		defer stopTick()
		for {
			select {
			case <-ctx.Done():
				return
			case <-m.stop:
				return
			case <-c:
			}
			r := SweepOnce(ctx, cfg)
			if cfg.Report != nil {
				cfg.Report(r)
			}
		}
	}()
	return m
}

// SweepOnce runs one sweep of cfg as Monitor does, and returns its report.
func SweepOnce(ctx context.Context, cfg MonitorConfig) SweepReport {
	var r SweepReport
	limit := cfg.Limit
	if limit <= 0 {
		limit = DefaultMonitorLimit
	}
	r.Stuck, r.Err = cfg.Store.Sweep(ctx, limit)
	for _, rec := range r.Stuck {
		if rec.State == StateUncertain {
			r.Uncertain++
		} else {
			r.InProgress++
		}
	}
	if cfg.Reconciler != nil && len(r.Stuck) > 0 {
		owner := cfg.Owner
		if owner == "" {
			owner = "monitor"
		}
		r.Reconciled = Reconcile(ctx, cfg.Store, cfg.Reconciler, r.Stuck, owner)
	}
	return r
}

// Stop stops the Monitor and waits for a sweep in progress to end. It is
// safe to call more than once.
func (m *Monitoring) Stop() {
	m.once.Do(func() { close(m.stop) })
	<-m.done
}

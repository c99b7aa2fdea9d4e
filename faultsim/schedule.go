package faultsim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// A schedule is everything a simulated run does, drawn from one seed before
// the run starts: the workload (actions, their callers, the provider's
// answers) and the faults. The same seed draws the same schedule, so a
// printed seed reruns it.
//
// The fault set is fixed here, as general classes, not as schedules aimed
// at one bug:
//
//   - a worker's process dies at a step of a call (before or after a store
//     write: Reserve, the sending mark, an attempt record, settling, a lease
//     renewal; before the provider got the request, or after it applied it
//     and before it answered);
//   - a store reply is lost after the write happened (where the world
//     has real connections, World.Cut: the connection is cut once the
//     statement committed);
//   - the connection of a store call is cut before the statement or
//     while it is in transit, so it never commits (World.Cut only), and
//     an Atomic handler's COMMIT is cut before it is sent or after it
//     ran (World.Tx only);
//   - a store call stalls longer than the lease (it still runs, late, as a
//     frozen Redis runs the command once it wakes; World.Stall stalls the
//     store itself, as a lock held in PostgreSQL does);
//   - a second delivery of the same job races the owner at a step, and
//     the job queue delivers a finished job once more later;
//   - a Monitor sweep with its Reconciler races the owner at a step, and a
//     periodic Monitor runs beside the workload;
//   - replicas stop acknowledging for a while (replica lag), then catch up
//     or the primary dies and a replica is promoted (Redis with a replica,
//     RedisConfig.WaitReplicas);
//   - an SDK re-sends a call it got an error for, numbering its re-sends
//     (X-Stainless-Retry-Count), and several actions carry identical
//     requests;
//   - the provider answers 429 with Retry-After (a cooldown) while a rate
//     limiter grants slots, and the limiter's store is unavailable for a
//     while;
//   - other callers of the same process flood the give-up memory between
//     a call and its SDK's re-send;
//   - the inbound middleware is retried by its client while the handler
//     runs (Atomic and not);
//   - the provider honours idempotency keys, or not;
//   - the provider answers at its edges (edge.go, drawn from a stream of
//     their own): redirects (301, 302, 303, 307, 308) that the worker's
//     http.Client follows, a 200 with an error body (GitHub GraphQL's
//     RATE_LIMITED with data null, or with data; Shopify's THROTTLED),
//     a body whose end comes late, a request it applies after the caller
//     left, and each preset's documented refusal, under a drawn preset's
//     Route (GitHub, Stripe, Shopify, OpenAI, Twilio, PayPal) or none;
//   - an inbound handler's server process dies before or after
//     MarkEffect, after its effect (outside the transaction, or inside it
//     before COMMIT), or its MarkEffect write fails or loses its reply,
//     and the server restarts under the same Owner or a new one
//     (inboundcrash.go, drawn from a stream of their own).
//   - the provider takes half a lease to process a request and applies it
//     whether or not its client is still there (a deadline or a death
//     cuts the client off, not the provider), and a Reconciler that looks
//     the action up (recVisible) cannot see a request still being
//     processed: "not found";
//   - processes restart under stable Owners as new instances (a pod's
//     name), some at once (a worker resuming its jobs), and a racing
//     delivery may run in a live process under the same Owner;
//   - where the store batches the calls of concurrent actions
//     (World.Batches): a batch's reply lost to every call in it, a batch
//     cut part-way through sending, and a racing delivery that takes one
//     call's action over while the batch waits (batch.go, drawn from a
//     stream of their own).

// point is a step of a call where a fault can strike.
type point uint8

const (
	atReserve point = iota
	atMark
	atAttempt
	atSettle // Complete or Fail
	atRenew
	atSend // the provider: before is "never arrived", after is "applied, not answered"
	numPoints
)

var pointNames = [...]string{"reserve", "mark", "attempt", "settle", "renew", "send"}

func (p point) String() string { return pointNames[p] }

// faultKind is what happens at a point.
type faultKind uint8

const (
	faultDie        faultKind = iota // the worker's process dies
	faultLostReply                   // the store wrote; its reply is lost
	faultStall                       // the store call runs 1.5 leases late
	faultRaceWorker                  // a second delivery of the job runs to its end
	faultRaceSweep                   // a Monitor sweep with its Reconciler runs
	faultLag                         // replicas stop acknowledging, then catch up or fail over
	faultCut                         // the store call's connection is cut before or while it commits
	// The batch faults (batch.go), drawn apart from the others
	// (Schedule.Batch):
	faultBatchLost     // a batch of store calls runs, and its reply is lost to all of them
	faultBatchCut      // a batch's connection is cut part-way through sending it
	faultBatchTakeover // a takeover lands while an owner's fenced write waits in or rides a batch
	faultBatchResent   // a batch runs, its reply is lost, and the client sends it again
)

var faultNames = [...]string{"die", "lost-reply", "stall", "race-worker", "race-sweep", "replica-lag", "commit-cut",
	"batch-lost-reply", "batch-cut", "batch-takeover", "batch-resent"}

func (k faultKind) String() string { return faultNames[k] }

// fault strikes at point of run Run of action Action, before or after the
// step. Only the first matching step of that run triggers it.
type fault struct {
	Action, Run int
	Point       point
	After       bool
	Kind        faultKind
	// Failover, for faultLag, promotes a replica when the lag ends
	// instead of letting it catch up.
	Failover bool
	// Cut, for faultCut, is where the connection breaks.
	Cut Cut
}

func (f fault) String() string {
	when := "before"
	if f.After {
		when = "after"
	}
	s := fmt.Sprintf("%s %s %s of action %d run %d", f.Kind, when, f.Point, f.Action, f.Run)
	if f.Kind == faultLag {
		s += map[bool]string{true: " then failover", false: " then catch-up"}[f.Failover]
	}
	if f.Kind == faultCut {
		s += " (" + f.Cut.String() + ")"
	}
	return s
}

// recKind is a Reconciler's behaviour.
type recKind uint8

const (
	recNone    recKind = iota
	recExact           // asks the provider by the action: applied or not (unknown while a request is in flight)
	recUnknown         // the provider cannot tell
	recFailing         // the provider lookup fails
	recVisible         // asks the provider by the action: what it has applied so far; a request still being processed is "not found"
)

var recNames = [...]string{"none", "exact", "unknown", "failing", "visible"}

func (k recKind) String() string { return recNames[k] }

// replyKind is how the provider answers one arrival of an action.
type replyKind uint8

const (
	replyOK          replyKind = iota // applies, 201
	replyError                        // applies, 500
	replyDrop                         // applies, then the connection drops
	replyUnavailable                  // 503 Retry-After: 0, not applied
	replyLimited                      // 429 Retry-After: 1, not applied (a cooldown)
	replySlow                         // a third of a lease, then applies, 201
	replyLate                         // processes for half a lease and applies, whether or not its client is still there, 201
)

var replyNames = [...]string{"ok", "500", "drop", "503", "429", "slow", "late"}

func (k replyKind) String() string {
	if k >= replyMoved301 {
		return edgeReplyNames[k-replyMoved301]
	}
	return replyNames[k]
}

// simAction is one business action of the workload and its job's caller.
type simAction struct {
	// Start is when its job first runs, from the start of the run.
	Start time.Duration
	// Deadline bounds each call of the job; zero means none.
	Deadline time.Duration
	// Replies are the provider's answers to its arrivals, in order; past
	// the list it answers ok.
	Replies []replyKind
	// Stream: the provider streams its ok answers (server-sent events):
	// the first bytes at once, the rest a third of a lease later.
	Stream bool
	// Again: the job queue (at least once) delivers the job once more,
	// a redelivery delay after it finished.
	Again bool
	// GraphQL: the action is a GraphQL mutation (the GitHub preset).
	GraphQL bool
}

// Schedule is one drawn run.
type Schedule struct {
	Seed int64
	// Honours: the provider deduplicates by Idempotency-Key, and the
	// Transport is told so (KeysHonoured); else it honours none and the
	// Transport sends none (OmitKey).
	Honours bool
	// SDK: callers are an SDK that numbers its re-sends and re-sends twice
	// on an error; Twins: every action's request is identical.
	SDK, Twins bool
	// Procs is how many worker processes share the jobs.
	Procs int
	// StableOwners: each process slot's worker runs under a stable
	// LedgerConfig.Owner (a pod name), which a restart in that slot keeps
	// under a new instance; else each process is an Owner of its own.
	// SharedOwner: a second delivery racing the owner runs in a live
	// process of its own under the same Owner (StableOwners only).
	StableOwners, SharedOwner bool
	// Redelivery is how long the job queue waits before it delivers a
	// job again whose worker died (its visibility timeout).
	Redelivery time.Duration
	// Reconciler is the Transport's; Monitor is the periodic Monitor's
	// (none: no Monitor) and the racing sweeps'.
	Reconciler, Monitor recKind
	// Limit is the limiter's rate per second; zero means no rate limit
	// (a limiter still honours cooldowns when Outage or 429s need one).
	Limit int
	// OutageFrom and OutageLen mark the limiter's store unavailable
	// (fail closed); zero length means never.
	OutageFrom, OutageLen time.Duration
	// Flood is how many give-ups other callers of the process make before
	// each SDK re-send.
	Flood int
	// FairQueue gives a Redis limiter a fair queue; LimiterLatency is the
	// one-way delay to its Redis (Redis world with a rate limit only).
	FairQueue      bool
	LimiterLatency time.Duration
	// WaitReplicas runs the ledger with RedisConfig.WaitReplicas 1.
	WaitReplicas bool
	// Lags are replica lag episodes at times of the run, beside those
	// faults start at a step (WaitReplicas only).
	Lags []lagEpisode
	// NoLedger runs the Transports without the action ledger (the Action
	// still names each call's key).
	NoLedger bool
	// GetBody: callers build requests as http.NewRequest does for a
	// bytes.Reader, with GetBody; else with a bare body.
	GetBody bool
	Actions []simAction
	Faults  []fault
	// Inbound, when set, runs the inbound middleware workload instead.
	Inbound *inboundSchedule
	// Preset, when set, is the provider's preset: the Transports' route,
	// the requests' path and the provider's answers (see drawEdges).
	Preset *preset
	// StoreLatency is the one-way delay to the ledger store, and Burst
	// starts every job at once, so that the calls of concurrent actions
	// share round trips; Batch is the batch fault, if any (batch.go,
	// drawn only where World.Batches says the store batches).
	StoreLatency time.Duration
	Burst        bool
	Batch        *batchFault
}

// floodSize is the give-ups of a flood: more than any give-up memory a
// Transport could be expected to keep without a cap per caller.
const floodSize = 12_000

// weighted returns an index drawn from rng with weights ps.
func weighted(rng *rand.Rand, ps ...float64) int {
	x := rng.Float64() * sum(ps)
	for i, p := range ps {
		if x < p {
			return i
		}
		x -= p
	}
	return len(ps) - 1
}

// drawSchedule draws the schedule of seed for world w.
func drawSchedule(seed int64, w *World) *Schedule {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	L := w.Lease
	pick := func(ps ...float64) int { return weighted(rng, ps...) }
	s := &Schedule{Seed: seed}
	if w.Inbound && rng.IntN(4) == 0 {
		s.Inbound = drawInbound(rng, w)
		drawCrashes(seed, s.Inbound)
		return s
	}
	s.Honours = rng.IntN(2) == 0
	s.SDK = rng.IntN(2) == 0
	s.Twins = s.SDK && rng.IntN(2) == 0
	s.Procs = 1 + rng.IntN(2)
	s.StableOwners = rng.IntN(4) != 0
	s.SharedOwner = s.StableOwners && rng.IntN(2) == 0
	s.Reconciler = recKind(pick(40, 15, 12, 12, 21))
	s.Monitor = recKind(pick(40, 15, 12, 12, 21))
	if rng.IntN(10) < 3 {
		s.Limit = []int{2, 5}[rng.IntN(2)]
	}
	if rng.IntN(10) == 0 {
		s.OutageFrom = time.Duration(rng.Int64N(int64(L)))
		s.OutageLen = L/10 + time.Duration(rng.Int64N(int64(L)))
	}
	if w.Limiter != nil && s.Limit > 0 {
		s.FairQueue = rng.IntN(2) == 0
		s.LimiterLatency = []time.Duration{0, L / 8, L / 4}[rng.IntN(3)]
	}
	if s.SDK && s.Limit == 0 && rng.IntN(30) == 0 { // a flood at 2/s would take hours
		s.Flood = floodSize
	}
	s.WaitReplicas = w.Replicas && rng.IntN(2) == 0
	s.NoLedger = !s.WaitReplicas && rng.IntN(5) == 0
	s.GetBody = rng.IntN(2) == 0
	n := 2 + rng.IntN(3)
	for range n {
		a := simAction{Start: (time.Duration(rng.Int64N(int64(L/10))) / time.Millisecond) * time.Millisecond}
		if rng.IntN(2) == 0 {
			a.Deadline = []time.Duration{L / 10, L / 2, 2 * L}[rng.IntN(3)]
		}
		for range 3 {
			a.Replies = append(a.Replies, replyKind(pick(45, 11, 11, 9, 7, 7, 10)))
		}
		s.Actions = append(s.Actions, a)
	}
	faults := rng.IntN(4)
	defer func() {
		// L/10: a restarted worker resumes its own jobs at once.
		s.Redelivery = []time.Duration{L / 10, L + L/3, 2 * L, 4 * L}[rng.IntN(4)]
		for i := range s.Actions {
			s.Actions[i].Stream = rng.IntN(8) == 0
		}
		for i := range s.Actions {
			s.Actions[i].Again = rng.IntN(3) == 0
		}
		if s.WaitReplicas {
			for range rng.IntN(3) {
				s.Lags = append(s.Lags, lagEpisode{At: time.Duration(rng.Int64N(int64(3 * L))), Failover: rng.IntN(2) == 0})
			}
		}
		drawEdges(seed, s)
		drawBatches(seed, s, w)
	}()
	for range faults {
		f := fault{Action: rng.IntN(n), Run: 1 + pick(70, 30), Point: point(rng.IntN(int(numPoints))), After: rng.IntN(2) == 0}
		kinds := []float64{35, 15, 15, 12, 13, 0}
		if s.WaitReplicas {
			kinds[faultLag] = 20
		}
		if w.Cut != nil {
			kinds = append(kinds, 25) // faultCut
		}
		if f.Point == atSend { // the provider is no store: no reply lost, no stall, no cut
			kinds[faultLostReply], kinds[faultStall], kinds[faultLag] = 0, 0, 0
			if w.Cut != nil {
				kinds[faultCut] = 0
			}
		}
		f.Kind = faultKind(pick(kinds...))
		switch f.Kind {
		case faultLostReply:
			f.After = true
		case faultStall:
			f.After = false
		case faultLag:
			f.Failover = rng.IntN(2) == 0
		case faultCut:
			f.After, f.Cut = false, []Cut{CutBefore, CutTorn}[rng.IntN(2)]
		}
		s.Faults = append(s.Faults, f)
	}
	return s
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// String prints the schedule, one fact per line, for a violation's report.
func (s *Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d\n", s.Seed)
	if s.Inbound != nil {
		b.WriteString(s.Inbound.String())
		return b.String()
	}
	if s.Preset != nil {
		fmt.Fprintf(&b, "  preset %s\n", s.Preset.name)
	}
	fmt.Fprintf(&b, "  provider honours keys %v, SDK re-sends %v, identical requests %v, processes %d, redelivery after %v\n",
		s.Honours, s.SDK, s.Twins, s.Procs, s.Redelivery)
	fmt.Fprintf(&b, "  stable owners %v, a racing delivery shares the owner %v\n", s.StableOwners, s.SharedOwner)
	if s.FairQueue || s.LimiterLatency > 0 {
		fmt.Fprintf(&b, "  Redis limiter: fair queue %v, latency %v\n", s.FairQueue, s.LimiterLatency)
	}
	fmt.Fprintf(&b, "  ledger %v, reconciler %s, monitor %s, limit %d/s, limiter outage %v+%v, flood %d, WaitReplicas %v, GetBody %v\n",
		!s.NoLedger, s.Reconciler, s.Monitor, s.Limit, s.OutageFrom, s.OutageLen, s.Flood, s.WaitReplicas, s.GetBody)
	for i, a := range s.Actions {
		fmt.Fprintf(&b, "  action %d: start %v, deadline %v, replies %v, streamed %v, delivered again %v, GraphQL %v\n", i, a.Start, a.Deadline, a.Replies, a.Stream, a.Again, a.GraphQL)
	}
	for _, f := range s.Faults {
		fmt.Fprintf(&b, "  fault: %s\n", f)
	}
	for _, l := range s.Lags {
		fmt.Fprintf(&b, "  fault: replica-lag at %v, then failover %v\n", l.At, l.Failover)
	}
	if s.StoreLatency > 0 || s.Burst {
		fmt.Fprintf(&b, "  store latency %v, jobs start at once %v\n", s.StoreLatency, s.Burst)
	}
	if s.Batch != nil {
		fmt.Fprintf(&b, "  fault: %s\n", s.Batch)
	}
	return b.String()
}

// lagEpisode is replica lag starting at At into the run, ending in a
// failover or a catch-up.
type lagEpisode struct {
	At       time.Duration
	Failover bool
}

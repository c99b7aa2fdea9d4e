package faultsim

// Faults aimed at shared round trips. The Redis and PostgreSQL stores
// share one round trip between the store calls of concurrent actions (a
// batch: internal/groupcommit), so one lost reply, one cut connection or
// one takeover meets several calls at once. A world whose store batches
// (World.Batches) calls Run.StrikeBatch before it sends each batch of two
// or more calls, and does to the batch what it returns; the simulator runs
// a takeover aimed at one call of the batch before it answers.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// Batching is how a world's store shares round trips between concurrent
// calls, for the faults that strike a batch.
type Batching struct {
	// On reports whether the store of schedule s batches (Redis: not
	// with WaitReplicas, whose WAIT counts one connection's writes).
	// Its Open gives each such schedule's Run, with SetUnbatched, a
	// second store over the same records whose calls never share a round
	// trip.
	On func(s *Schedule) bool
	// Cut reports whether the world cuts a batch part-way (StrikeCut);
	// else it only loses a batch's reply (StrikeLost).
	Cut bool
	// Resend reports whether the world's store client sends a batch
	// again when its reply is lost (StrikeResent), as go-redis does
	// after a broken connection; pgx never does.
	Resend bool
}

// SetUnbatched gives r a second store over the records of its store whose
// calls never share a round trip (MaxBatch 1): the store of the racing
// delivery that takes an action over while a batch waits for it (a
// takeover on the batched store would wait for that very batch). A world
// with Batches calls it from Open.
func (r *Run) SetUnbatched(s ledger.Store) { r.side = s }

// BatchCall is one store call in a batch, as the world's store sends it:
// the ID of its action's record (ledger.Key.ID) and its fencing token, zero
// when it carries none (Reserve).
type BatchCall struct {
	ID    string
	Token int64
}

// Strike is what the world does to one batch's round trip.
type Strike uint8

// The strikes StrikeBatch returns.
const (
	// StrikeNone sends the batch as it is.
	StrikeNone Strike = iota
	// StrikeLost runs the whole batch on the store and loses its reply
	// for every call in it (the connection is cut once the store
	// answered): every call's write may have been made.
	StrikeLost
	// StrikeCut cuts the batch's connection after part of it was sent:
	// on PostgreSQL nothing of it commits; on Redis the commands that
	// arrived ran. Every call gets an error.
	StrikeCut
	// StrikeResent runs the whole batch, loses its reply, and sends the
	// batch again, as the client's own retry does: every call gets the
	// second run's answer. The world reports to Run.Landed the fenced
	// writes whose first run wrote.
	StrikeResent
)

// batchFault is the one batch fault a schedule may draw, and what it
// strikes (Schedule.Batch).
type batchFault struct {
	Kind faultKind // faultBatchLost, faultBatchCut, faultBatchTakeover or faultBatchResent
	// Nth, for a lost reply, a cut or a re-send, is the batch of two or
	// more store calls it strikes: the schedule's first, second or third.
	Nth int
}

func (f batchFault) String() string {
	switch f.Kind {
	case faultBatchLost:
		return fmt.Sprintf("%s: batch %d of two or more store calls runs, and its reply is lost to every call in it", f.Kind, f.Nth)
	case faultBatchCut:
		return fmt.Sprintf("%s: batch %d of two or more store calls is cut part-way through sending", f.Kind, f.Nth)
	case faultBatchResent:
		return fmt.Sprintf("%s: batch %d of two or more store calls runs, its reply is lost, and the client sends it again", f.Kind, f.Nth)
	}
	return fmt.Sprintf("%s: a racing delivery under the same owner takes an action over while a worker's fenced write on it waits in, or rides, batch %d of two or more store calls that carries one",
		f.Kind, f.Nth)
}

// drawBatches draws, from a stream of its own so that the rest of a seed's
// schedule stays as it was, what makes batches form in a world whose store
// batches (the store's latency, actions that start together) and the batch
// fault, if any.
func drawBatches(seed int64, s *Schedule, w *World) {
	if w.Batches == nil || s.NoLedger || s.Inbound != nil || !w.Batches.On(s) {
		return
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0xba7c4))
	L := w.Lease
	// A round trip of a few milliseconds, as a store across a network:
	// calls of concurrent actions then overlap, and wait for one another.
	latencies := []time.Duration{0, L / 60, L / 30}
	burst := rng.IntN(2) == 0 // every job starts at once
	var f *batchFault
	if rng.IntN(3) != 0 {
		kinds := []faultKind{faultBatchLost}
		if w.Batches.Cut {
			kinds = append(kinds, faultBatchCut)
		}
		if w.Batches.Resend {
			kinds = append(kinds, faultBatchResent)
		}
		if s.StableOwners { // a racing delivery reclaims at once only from the same owner
			kinds = append(kinds, faultBatchTakeover)
		}
		f = &batchFault{Kind: kinds[rng.IntN(len(kinds))], Nth: 1 + weighted(rng, 60, 25, 15)}
		// A fault needs a batch to strike: the jobs start together, over
		// a link slow enough that their calls meet.
		latencies, burst = latencies[1:], true
	}
	s.StoreLatency = latencies[rng.IntN(len(latencies))]
	if burst {
		for i := range s.Actions {
			s.Actions[i].Start = s.Actions[0].Start
		}
		s.Burst = true
	}
	s.Batch = f
}

// batchState is a run's batch fault (guarded by the run's mu).
type batchState struct {
	done bool // struck (or the takeover ran)
	// grants, for a takeover, are the workers' grants so far, by token:
	// the run each was made to. fenced counts the batches that carried a
	// fenced write under one.
	grants map[int64]grant
	fenced int
	// id and token, for a takeover, are the fenced write it struck.
	id    string
	token int64
	// landed: the takeover reserved while the write waited in its batch;
	// counted: its refusal was counted as a hit.
	landed, counted bool
	// wrote, for a re-sent batch, holds its fenced writes whose first
	// run wrote (Run.Landed).
	wrote map[BatchCall]bool
}

// batchCounts counts, across a world's schedules, the batches and the
// batch faults drawn and hit, for the summary that proves they fire.
type batchCounts struct {
	batches, calls, schedules atomic.Int64
	drawn, hit                [4]atomic.Int64 // by faultKind - faultBatchLost
}

// summary is the counts' line in Simulate's log.
func (c *batchCounts) summary() string {
	s := fmt.Sprintf("%d batches of two or more store calls carried %d calls in %d schedules", c.batches.Load(), c.calls.Load(), c.schedules.Load())
	for i, k := range []faultKind{faultBatchLost, faultBatchCut, faultBatchTakeover, faultBatchResent} {
		s += fmt.Sprintf("; %s hit %d of the %d schedules that drew it", k, c.hit[i].Load(), c.drawn[i].Load())
	}
	return s
}

// granted records, for a takeover, that the worker's call in ctx was
// granted token.
func (r *Run) granted(ctx context.Context, token int64) {
	ci := callOf(ctx)
	if r.s.Batch == nil || r.s.Batch.Kind != faultBatchTakeover || token == 0 || ci == nil || ci.run <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.batch.grants == nil {
		r.batch.grants = map[int64]grant{}
	}
	r.batch.grants[token] = grant{action: ci.action, run: ci.run, slot: ci.proc.slot}
}

// grant is the run of a worker a token was granted to, and the process
// slot it ran in.
type grant struct{ action, run, slot int }

// StrikeBatch is called by the world's store before it sends a batch of
// two or more store calls, and returns what the world does to its round
// trip. When the schedule's takeover aims at one of calls, a racing
// delivery takes that action over before StrikeBatch returns, so the
// call's fenced write in the batch is refused, and the batch's other calls
// go on as they would.
func (r *Run) StrikeBatch(calls []BatchCall) Strike {
	if len(calls) < 2 {
		return StrikeNone
	}
	r.Logf("store: a batch of %d calls", len(calls))
	c := &r.w.batchCounts
	c.batches.Add(1)
	c.calls.Add(int64(len(calls)))
	r.mu.Lock()
	if !r.batched {
		r.batched = true
		c.schedules.Add(1)
	}
	r.nbatches++
	f, st := r.s.Batch, &r.batch
	if f == nil || st.done {
		r.mu.Unlock()
		return StrikeNone
	}
	switch f.Kind {
	case faultBatchLost, faultBatchCut, faultBatchResent:
		if r.nbatches != f.Nth {
			r.mu.Unlock()
			return StrikeNone
		}
		st.done = true
		r.mu.Unlock()
		c.hit[f.Kind-faultBatchLost].Add(1)
		r.Logf("FAULT %s strikes a batch of %d store calls", f.Kind, len(calls))
		switch f.Kind {
		case faultBatchLost:
			return StrikeLost
		case faultBatchCut:
			return StrikeCut
		}
		return StrikeResent
	}
	var aim grant
	aimed := false
	for _, bc := range calls {
		if g, ok := st.grants[bc.Token]; ok && bc.Token != 0 && !aimed {
			aim, aimed, st.id, st.token = g, true, bc.ID, bc.Token
		}
	}
	if aimed {
		st.fenced++
	}
	if !aimed || st.fenced != f.Nth {
		r.mu.Unlock()
		return StrikeNone
	}
	st.done = true
	r.mu.Unlock()
	r.Logf("FAULT %s: action %d run %d's fenced write (token %d) is in a batch of %d store calls", f.Kind, aim.action, aim.run, st.token, len(calls))
	if r.takeover(aim) {
		r.mu.Lock()
		st.landed = true
		r.mu.Unlock()
	}
	return StrikeNone
}

// takeover starts a racing delivery of g's action in a live process of its
// own under the owner of g's run (a new instance of it in the same slot, so
// its Reserve reclaims the action at once), whose Reserve goes to the
// unbatched store, and reports whether that Reserve returned within a
// third of a lease.
func (r *Run) takeover(g grant) bool {
	p := r.newProc(g.slot)
	p.sideReserve = make(chan struct{})
	reserved := p.sideReserve
	r.mu.Lock()
	r.raced[g.action] = true
	r.mu.Unlock()
	r.racers.Add(1)
	go func() {
		defer r.racers.Done()
		r.call(g.action, 0, p)
	}()
	t := time.NewTimer(r.w.Lease / 3)
	defer t.Stop()
	select {
	case <-reserved:
		return true
	case <-t.C:
		r.Logf("batch takeover: the racing delivery did not reserve within %v", r.w.Lease/3)
		return false
	}
}

// fencedDone counts a takeover that hit: the armed write, in a batch with
// the takeover before it, was refused as no longer the owner's.
func (r *Run) fencedDone(k ledger.Key, token int64, err error) {
	if r.s.Batch == nil || r.s.Batch.Kind != faultBatchTakeover || !errors.Is(err, ledger.ErrNotOwner) {
		return
	}
	r.mu.Lock()
	st := &r.batch
	hit := st.landed && !st.counted && st.id == k.ID() && st.token == token
	if hit {
		st.counted = true
	}
	r.mu.Unlock()
	if hit {
		r.w.batchCounts.hit[faultBatchTakeover-faultBatchLost].Add(1)
		r.Logf("batch takeover: the write on %s with token %d was refused in its batch: %v", k.Key, token, err)
	}
}

// Landed is called by the world, for a batch it struck with StrikeResent,
// with the fenced writes of the batch whose first run wrote, before it
// sends the batch again.
func (r *Run) Landed(calls []BatchCall) {
	r.mu.Lock()
	if r.batch.wrote == nil {
		r.batch.wrote = map[BatchCall]bool{}
	}
	for _, c := range calls {
		r.batch.wrote[c] = true
	}
	r.mu.Unlock()
	r.Logf("store: %d fenced writes of the batch wrote in its first run", len(calls))
}

// resentDone checks the answer to a settling write (Complete, Fail) or an
// AddAttempt that rode a batch the client sent again: when its first run
// wrote and no grant followed it (the record's newest history entry is
// still under its token), "not the owner" answers the owner's own write as
// another's.
func (r *Run) resentDone(op string, k ledger.Key, token int64, err error) {
	if !errors.Is(err, ledger.ErrNotOwner) {
		return
	}
	r.mu.Lock()
	wrote := r.batch.wrote[BatchCall{ID: k.ID(), Token: token}]
	r.mu.Unlock()
	if !wrote {
		return
	}
	rec, gerr := r.store.Get(context.Background(), k)
	if gerr != nil || len(rec.Attempts) == 0 || rec.Attempts[len(rec.Attempts)-1].Token != token {
		return
	}
	r.violate("a write that landed answered as another owner's",
		"%s of %s with token %d wrote in the first run of a batch the client sent again, and was answered %v, though no grant followed it",
		op, k.Key, token, err)
}

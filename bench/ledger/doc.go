// Package ledgerbench measures what the action ledger costs a keyed POST
// through the Transport: actions per second with a Memory, Redis and
// PostgreSQL ledger beside the same Transport without one, in interleaved
// rounds of one run. It is a separate module so that the SDK's go.mod does
// not depend on pgx.
//
// Run from this directory:
//
//	LEDGER_COMPARE=1 go test -run 'TestCompare|TestRedisFloor' -v -timeout 30m
//
// LEDGER_COMPARE_ROUNDS (9) and LEDGER_COMPARE_CONC (1, 16 and 64) change
// the rounds and the concurrencies; LEDGER_COMPARE_ONLY (a comma-separated
// list of names, such as "memory,redis") keeps only those contenders
// beside the ledger-free one. Beside actions per second and the
// median of the per-round ratios to the ledger-free Transport, it reports
// per action the store round trips counted at the driver (a go-redis hook,
// a pgx tracer: a command, a pipeline, a statement or a batch each) and the
// store's own time: for Redis, the µs Redis spent running the scripts
// (INFO commandstats); for PostgreSQL, the µs the statements ran
// (pg_stat_statements; the commits' WAL flushes are not in it: one per
// round trip, a lone statement's or a batch's); and the CPU per action of
// this process and of the whole machine, where the store's servers show.
// TestRedisFloor prices a bare pipelined script beside the ledger's own
// Reserve and Complete. Redis and PostgreSQL are private
// servers started for the run, whatever REDIS_ADDR and DATABASE_URL say,
// so that their counters hold the run's work alone. The "unbatched"
// contenders are the same stores with MaxBatch 1: every call its own round
// trip.
package ledgerbench

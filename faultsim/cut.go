package faultsim

// Cut is where a world with real connections (World.Cut, TxWorld.CutCommit)
// breaks the connection a store call or a commit goes over.
type Cut uint8

// The cuts a schedule draws.
const (
	// CutBefore closes the connection instead of sending the statement:
	// it never runs, and the client cannot know that.
	CutBefore Cut = iota + 1
	// CutTorn sends part of the statement, then closes the connection:
	// the server reads a torn message and runs nothing.
	CutTorn
	// CutAfter sends the statement and closes the connection once the
	// server answered, before the answer reaches the client: the
	// statement ran (committed), and the client cannot know that.
	CutAfter
)

var cutNames = [...]string{"none", "before it is sent", "torn in transit", "after it committed"}

// String names the cut for a schedule and its trace.
func (c Cut) String() string { return cutNames[c] }

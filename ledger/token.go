package ledger

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
)

// NewNonce returns a fresh random ReserveRequest.Nonce: 128 bits in hex.
func NewNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// maxToken bounds fencing tokens to 52 bits. Redis Lua numbers are
// doubles, exact up to 2^53, and the script adds one per takeover; staying
// well below keeps every token exact on both sides.
const maxToken = 1<<52 - 1

// newToken returns the first fencing token of a new record. Tokens start
// at a random value, not at 1, so an owner that stalled through a record's
// whole retention cannot complete the next action created under the same
// key: its old token would match a counter restarted at 1. Takeovers add
// one, so within one record tokens only grow.
func newToken() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	// Half the range leaves the other half for takeovers.
	return int64(binary.BigEndian.Uint64(b[:])&(maxToken>>1)) + 1
}

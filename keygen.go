package retrybudget

import (
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// keyLen is the length of a generated key: a UUID in its text form.
const keyLen = 36

// keysPerBatch is how many keys a keyMint makes at once.
const keysPerBatch = 16

// keyMint hands out the random keys of calls that carry none (see
// resolveKey). It makes them keysPerBatch at a time, in one string, so that
// a key costs an eighth of an allocation, and hands them out without a
// lock, so that concurrent calls do not queue for their keys; a key kept
// after its call keeps its batch, under 600 bytes, alive. The randomness
// comes from a ChaCha8 generator, cryptographically strong, seeded from
// crypto/rand: a key must be unique and unguessable, and crypto/rand costs
// five times as much per byte.
type keyMint struct {
	mu    sync.Mutex               // guards rng
	rng   *rand.ChaCha8            // nil until the first batch
	batch atomic.Pointer[keyBatch] // the batch keys are taken from; nil at first
}

// keyBatch is keysPerBatch keys, of which the first taken were handed out.
type keyBatch struct {
	keys  string
	taken atomic.Int32
}

// key returns a fresh key, never handed out before. When the batch is used
// up, the call makes the next one; calls that find it used up together each
// make one, and the keys left in all but the last are never used.
func (m *keyMint) key() string {
	if b := m.batch.Load(); b != nil {
		if i := int(b.taken.Add(1)) - 1; i < keysPerBatch {
			return b.keys[i*keyLen : (i+1)*keyLen]
		}
	}
	b := &keyBatch{keys: m.newBatch()}
	b.taken.Store(1)
	m.batch.Store(b)
	return b.keys[:keyLen]
}

// newBatch returns a new batch of keys from the mint's generator.
func (m *keyMint) newBatch() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rng == nil {
		var seed [32]byte
		crand.Read(seed[:]) // never fails: crypto/rand crashes the program instead
		m.rng = rand.NewChaCha8(seed)
	}
	return newKeys(m.rng)
}

// newKeys returns keysPerBatch random keys from rng, one after the other.
// Each is a version 4 UUID (RFC 9562 §5.4) in its canonical text form,
// lower-case hex, as uuid.NewString makes.
func newKeys(rng *rand.ChaCha8) string {
	var random [keysPerBatch * 16]byte
	rng.Read(random[:])
	var text [keysPerBatch * keyLen]byte
	for i := range keysPerBatch {
		u, s := random[i*16:(i+1)*16], text[i*keyLen:(i+1)*keyLen]
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // variant 10 (RFC 9562 §4.1)
		hex.Encode(s[0:8], u[0:4])
		s[8] = '-'
		hex.Encode(s[9:13], u[4:6])
		s[13] = '-'
		hex.Encode(s[14:18], u[6:8])
		s[18] = '-'
		hex.Encode(s[19:23], u[8:10])
		s[23] = '-'
		hex.Encode(s[24:36], u[10:16])
	}
	return string(text[:])
}

package retrybudget

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// keyLen is the length of a generated key: a UUID in its text form.
const keyLen = 36

// keysPerBatch is how many keys a keyMint makes at once.
const keysPerBatch = 16

// keyMint hands out the random keys of calls that carry none (see
// resolveKey). It makes them keysPerBatch at a time, in one string, so a
// key costs a sixteenth of an allocation and of a read from crypto/rand;
// a key kept after its call keeps its batch, under 600 bytes, alive.
type keyMint struct {
	mu   sync.Mutex // guards keys
	keys string     // keys not handed out yet, keyLen bytes each
}

// key returns a fresh key, never handed out before.
func (m *keyMint) key() string {
	m.mu.Lock()
	if len(m.keys) >= keyLen {
		k := m.keys[:keyLen]
		m.keys = m.keys[keyLen:]
		m.mu.Unlock()
		return k
	}
	m.mu.Unlock()
	// Made without the lock, so that other calls are not held up; a
	// batch another call put in place meanwhile is dropped unused.
	keys := newKeys()
	m.mu.Lock()
	m.keys = keys[keyLen:]
	m.mu.Unlock()
	return keys[:keyLen]
}

// newKeys returns keysPerBatch random keys, one after the other. Each is a
// version 4 UUID (RFC 9562 §5.4) in its canonical text form, lower-case
// hex, as uuid.NewString makes.
func newKeys() string {
	var random [keysPerBatch * 16]byte
	rand.Read(random[:]) // never fails: crypto/rand crashes the program instead
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

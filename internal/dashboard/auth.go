package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"time"

	"github.com/sandboxd/sandboxd/internal/state"
)

// Token kinds: a login token is the link's, a session token the cookie's,
// a preview token opens one port of one session (its scope).
const (
	kindLogin   byte = 'l'
	kindSession byte = 's'
	kindPreview byte = 'p'
)

// signer makes and checks tokens: kind, expiry and a nonce, signed with
// HMAC-SHA256 under a key kept in the state directory, so that they
// outlive a restart and need no table.
type signer struct{ key []byte }

const payloadSize = 1 + 8 + 16

// loadKey reads state_dir/dashboard.key, making it the first time.
// Removing it signs every browser out.
func loadKey(stateDir string) (*signer, error) {
	key, err := state.Key(stateDir, "dashboard.key", "the dashboard's key")
	if err != nil {
		return nil, err
	}
	return &signer{key: key}, nil
}

// issue makes a token of kind, good for ttl, and only for scope (what
// it opens: its signature covers the scope, which the token does not
// carry, so it is no use for anything else).
func (s *signer) issue(kind byte, ttl time.Duration, scope ...string) (string, time.Time) {
	expires := time.Now().Add(ttl).Truncate(time.Second)
	p := make([]byte, payloadSize)
	p[0] = kind
	binary.BigEndian.PutUint64(p[1:9], uint64(expires.Unix()))
	_, _ = rand.Read(p[9:])
	return base64.RawURLEncoding.EncodeToString(append(p, s.mac(scoped(p, scope))...)), expires
}

// valid says whether tok is a token of kind for scope, signed by us, not
// expired.
func (s *signer) valid(tok string, kind byte, scope ...string) bool {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != payloadSize+sha256.Size || b[0] != kind {
		return false
	}
	p := b[:payloadSize]
	expires := time.Unix(int64(binary.BigEndian.Uint64(p[1:9])), 0)
	return hmac.Equal(b[payloadSize:], s.mac(scoped(p, scope))) && time.Now().Before(expires)
}

// scoped is what a token's signature covers: its payload, then each part
// of its scope ended by a NUL, so parts cannot run into each other.
func scoped(payload []byte, scope []string) []byte {
	out := slices.Clone(payload)
	for _, part := range scope {
		out = append(append(out, part...), 0)
	}
	return out
}

// csrf is the value a session's state-changing requests must carry in
// their header: bound to the session, so a value from another is no use.
func (s *signer) csrf(session string) string {
	return base64.RawURLEncoding.EncodeToString(s.mac(append([]byte("csrf\x00"), session...)))
}

func (s *signer) mac(data []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(data)
	return m.Sum(nil)
}

// sameValue compares secrets in constant time.
func sameValue(a, b string) bool { return a != "" && hmac.Equal([]byte(a), []byte(b)) }

package e2b

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// The signature E2B's SDK makes for a file URL (src/sandbox/signature.ts)
// opens that path, for that operation and user, until it expires; any
// other change of the URL, or another sandbox's token, does not.
func TestSignedFileURLs(t *testing.T) {
	const token = "tok-a"
	sign := func(path, op, user string, exp int64) url.Values {
		raw := path + ":" + op + ":" + user + ":" + token
		q := url.Values{"path": {path}}
		if user != "" {
			q.Set("username", user)
		}
		if exp != 0 {
			raw += ":" + strconv.FormatInt(exp, 10)
			q.Set("signature_expiration", strconv.FormatInt(exp, 10))
		}
		sum := sha256.Sum256([]byte(raw))
		q.Set("signature", "v1_"+base64.RawStdEncoding.EncodeToString(sum[:]))
		return q
	}
	later := time.Now().Add(time.Minute).Unix()
	cases := []struct {
		name           string
		method         string
		q              url.Values
		edit           func(url.Values)
		ok, expiredNow bool
	}{
		{"a download", "GET", sign("/home/user/a", "read", "", 0), nil, true, false},
		{"an upload", "POST", sign("/home/user/a", "write", "user", later), nil, true, false},
		{"a download URL used to upload", "POST", sign("/home/user/a", "read", "", 0), nil, false, false},
		{"another path", "GET", sign("/home/user/a", "read", "", 0), func(q url.Values) { q.Set("path", "/home/user/b") }, false, false},
		{"another user", "GET", sign("/home/user/a", "read", "user", 0), func(q url.Values) { q.Set("username", "root") }, false, false},
		{"a later expiration", "GET", sign("/home/user/a", "read", "", later), func(q url.Values) { q.Set("signature_expiration", strconv.FormatInt(later+3600, 10)) }, false, false},
		{"expired", "GET", sign("/home/user/a", "read", "", time.Now().Add(-time.Second).Unix()), nil, true, true},
		{"another method", "PUT", sign("/home/user/a", "write", "", 0), nil, false, false},
		// A signature opens the files endpoint alone: not the agent's
		// processes, file system RPCs or environment, nor the Code
		// Interpreter's port.
		{"a process started", "POST", sign("/home/user/a", "write", "", 0), nil, false, false},
		{"the environment read", "GET", sign("/home/user/a", "read", "", 0), nil, false, false},
		{"the interpreter's port", "POST", sign("/home/user/a", "write", "", 0), nil, false, false},
	}
	endpoint := map[string]string{"a process started": "/process.Process/Start", "the environment read": "/envs"}
	for _, tc := range cases {
		if tc.edit != nil {
			tc.edit(tc.q)
		}
		path := "/files"
		if p, ok := endpoint[tc.name]; ok {
			path = p
		}
		r := httptest.NewRequest(tc.method, path+"?"+tc.q.Encode(), nil)
		if tc.name == "the interpreter's port" {
			r.Header.Set("E2b-Sandbox-Port", interpreterPort)
		}
		if got := signedFor(r, token); got != tc.ok {
			t.Errorf("%s: signed %v, want %v", tc.name, got, tc.ok)
		}
		if signedFor(r, "tok-b") {
			t.Errorf("%s: signed for another sandbox's token", tc.name)
		}
		if got := signatureExpired(r); got != tc.expiredNow {
			t.Errorf("%s: expired %v, want %v", tc.name, got, tc.expiredNow)
		}
	}
}

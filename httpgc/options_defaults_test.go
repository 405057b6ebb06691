package httpgc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The zero Options take the defaults their docs give.
func TestZeroOptionsTakeTheDocumentedDefaults(t *testing.T) {
	o, _, err := Options{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, time.Second, o.Interval)
	assert.Equal(t, 15*time.Second, o.Heartbeat)
	assert.Equal(t, 100, o.Rows)
	assert.Equal(t, 32, o.MaxClients)
	assert.Equal(t, 100, o.Warnings)
	assert.Equal(t, 60, o.History)
	assert.Equal(t, 10*time.Second, o.LongRun)
}

// Each bound is taken, and one past it refused naming the field. The
// shortest Interval and Heartbeat, 100ms, are taken too.
func TestOptionsAtTheirBoundsAreTaken(t *testing.T) {
	for _, c := range []struct {
		name     string
		at, past Options
		want     string
	}{
		{"Rows", Options{Rows: 1000}, Options{Rows: 1001}, "Rows is 1001, want 0 (default 100) or 1 to 1000"},
		{"MaxClients", Options{MaxClients: 1 << 16}, Options{MaxClients: 1<<16 + 1}, "MaxClients is 65537, want 0 (default 32) or 1 to 65536"},
		{"Warnings", Options{Warnings: 1 << 16}, Options{Warnings: 1<<16 + 1}, "Warnings is 65537, want 0 (default 100) or 1 to 65536"},
		{"History", Options{History: 600}, Options{History: 601}, "History is 601, want 0 (default 60) or 1 to 600"},
		{"Interval", Options{Interval: 100 * time.Millisecond}, Options{Interval: 100*time.Millisecond - 1}, "Interval is 99.999999ms"},
		{"Heartbeat", Options{Heartbeat: 100 * time.Millisecond}, Options{Heartbeat: 100*time.Millisecond - 1}, "Heartbeat is 99.999999ms"},
	} {
		_, _, err := c.at.withDefaults()
		assert.NoError(t, err, c.name)
		_, _, err = c.past.withDefaults()
		assert.ErrorContains(t, err, c.want, c.name)
	}
}

// HashKey's name is "h-" and the first 8 bytes of HMAC-SHA-256 in hex,
// under the secret as it was when HashKey was called.
func TestHashKeyIsTheHMACOfTheSecretGiven(t *testing.T) {
	secret := []byte("secret")
	hash := HashKey(secret)
	secret[0] = 'S' // the caller's slice changes before the first hash
	m := hmac.New(sha256.New, []byte("secret"))
	m.Write([]byte("tenant-1"))
	want := "h-" + hex.EncodeToString(m.Sum(nil)[:8])
	assert.Equal(t, want, hash("tenant-1"))
	assert.Equal(t, want, hash("tenant-1"), "one key, one name")
}

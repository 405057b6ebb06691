package benchmarks

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a peer leaves a goroutine behind after Close.
// What runs before it (ants' package-level default pool) is not a leak.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

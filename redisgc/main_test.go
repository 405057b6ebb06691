package redisgc

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// quiet drops go-redis's log lines: the tests stop servers on purpose.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	if env := os.Getenv(childEnv); env != "" {
		os.Exit(runChild(env))
	}
	goleak.VerifyTestMain(m)
}

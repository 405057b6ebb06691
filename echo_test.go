package groupconc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestErrorsQuoteAndCutWhatTheyEcho: an error quotes and cuts a caller's
// string or a policy file's text. So no megabyte or terminal escape
// reaches a log.
func TestErrorsQuoteAndCutWhatTheyEcho(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	digits := strings.Repeat("9", 1<<20)
	nasty := "a\nb\x1b[31mred\x00"
	hugeNasty := strings.Repeat(nasty, 1<<16)
	parse := func(doc string) error {
		_, err := groupconc.ParsePolicy([]byte(doc))
		return err
	}
	for _, tc := range []struct {
		name string
		err  func() error
		is   error
		want string // a part of the error
	}{
		{"unknown field with escapes", func() error { return parse(`{"a\nb\u001b[31m": 1}`) }, groupconc.ErrInvalidPolicy, `"a\nb\x1b[31m": unknown field`},
		{"huge unknown field", func() error { return parse(`{"` + huge + `": 1}`) }, groupconc.ErrInvalidPolicy, `"xxxx`},
		{"unknown field twice", func() error { return parse(`{"a\n": 1, "a\n": 2}`) }, groupconc.ErrInvalidPolicy, `"a\n": given twice`},
		{"huge unknown pressure field", func() error { return parse(`{"pressure": {"` + huge + `": 1}}`) }, groupconc.ErrInvalidPolicy, `pressure."xxxx`},
		{"unknown pressure field with a zero", func() error { return parse(`{"pressure": {"a0": 1}}`) }, groupconc.ErrInvalidPolicy, `pressure.a0: unknown field`},
		{"unknown pressure field as long as is bare", func() error { return parse(`{"pressure": {"` + strings.Repeat("y", 64) + `": 1}}`) }, groupconc.ErrInvalidPolicy, `pressure.` + strings.Repeat("y", 64) + `: unknown field`},
		{"huge word for a limit", func() error { return parse(`{"globalMaxInFlight": "` + huge + `"}`) }, groupconc.ErrInvalidPolicy, `globalMaxInFlight: "xxxx`},
		{"huge number", func() error { return parse(`{"globalMaxInFlight": ` + digits + `}`) }, groupconc.ErrInvalidPolicy, `globalMaxInFlight: 9999`},
		{"huge fraction", func() error { return parse(`{"globalMaxInFlight": 1.` + digits + `}`) }, groupconc.ErrInvalidPolicy, `globalMaxInFlight: 1.999`},
		{"huge key", func() error { return parse(`{"perGroupMaxConcurrency": {"` + huge + `": 0}}`) }, groupconc.ErrInvalidPolicy, `perGroupMaxConcurrency["xxxx`},
		{"key with escapes", func() error { return parse(`{"perGroupMaxInFlight": {"a\u001b": 0}}`) }, groupconc.ErrInvalidPolicy, `perGroupMaxInFlight["a\x1b"]: 0 is below 1`},
		{"huge duration", func() error { return parse(`{"idleGroupTTL": "` + huge + `"}`) }, groupconc.ErrInvalidPolicy, `idleGroupTTL: "xxxx`},
		{"huge rejection policy", func() error { return parse(`{"rejectionPolicy": "` + huge + `"}`) }, groupconc.ErrInvalidPolicy, `rejectionPolicy: "xxxx`},
		{"huge string for an object", func() error { return parse(`{"pressure": "` + huge + `"}`) }, groupconc.ErrInvalidPolicy, `pressure: "xxxx`},
		{"Build, a nasty key", func() error {
			_, err := groupconc.NewPolicyBuilder().PerGroupMaxConcurrency(map[string]int{hugeNasty: 0}).Build()
			return err
		}, groupconc.ErrInvalidPolicy, `PerGroupMaxConcurrency["a\nb\x1b[31mred\x00a`},
		{"SetGroupOverride, a nasty unknown group", func() error {
			e := groupconc.New(nil)
			defer e.Close()
			return e.SetGroupOverride(hugeNasty, groupconc.GroupOverride{})
		}, groupconc.ErrUnknownGroup, `"a\nb\x1b[31mred\x00a`},
		{"RejectedError", func() error {
			return &groupconc.RejectedError{GroupKey: hugeNasty, TaskID: nasty, Reason: "why\x1b"}
		}, groupconc.ErrRejected, `task "a\nb\x1b[31mred\x00" of group "a\nb\x1b[31mred\x00a`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			msg := err.Error()
			require.Less(t, len(msg), 1024, "the error is short")
			assert.True(t, utf8.ValidString(msg), "the error is valid UTF-8")
			assert.False(t, strings.ContainsFunc(msg, func(r rune) bool { return r < ' ' || r == 0x7f }),
				"the error holds no control character: %q", msg)
			assert.Contains(t, msg, tc.want)
		})
	}
}

// TestAnEchoIsCutBetweenRunes: a string cut for an error is cut before a
// rune the cut would split, not inside it.
func TestAnEchoIsCutBetweenRunes(t *testing.T) {
	for _, pre := range []string{"", "x", "xx"} {
		key := pre + strings.Repeat("€", 100)
		_, err := groupconc.NewPolicyBuilder().PerGroupMaxConcurrency(map[string]int{key: 0}).Build()
		require.Error(t, err)
		assert.NotContains(t, err.Error(), `\x`, "a rune split by the cut")
		assert.Contains(t, err.Error(), `["`+pre+"€€")
	}
}

// TestRejectionRunTwiceQuotesTheTaskItNames: Rejection.Run's error names
// the task as every error does, quoted and cut.
func TestRejectionRunTwiceQuotesTheTaskItNames(t *testing.T) {
	long := strings.Repeat("k\n", 1<<12)
	var second error
	p := mustBuild(t, groupconc.NewPolicyBuilder().
		DefaultQueueThresholdPerGroup(0).
		RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
			if _, err := r.Run(ctx); err != nil {
				return nil, err
			}
			_, second = r.Run(ctx)
			return nil, nil
		}))
	e := groupconc.New(p)
	defer e.Close()
	release := make(chan struct{})
	first, err := groupconc.Submit(t.Context(), e, long, "first", func(context.Context) (int, error) {
		<-release
		return 0, nil
	})
	require.NoError(t, err)
	h, err := groupconc.Submit(t.Context(), e, long, "second", func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	res := h.Wait()
	close(release)
	first.Wait()
	require.Equal(t, groupconc.StatusSuccess, res.Status)
	require.Error(t, second)
	require.Less(t, len(second.Error()), 512)
	assert.NotContains(t, second.Error(), "\n")
	assert.False(t, errors.Is(second, groupconc.ErrRejected))
}

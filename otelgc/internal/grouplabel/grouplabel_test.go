package grouplabel

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// series is what a test Set keeps per value: the value it was made for.
type series struct{ value string }

func newSeries(made *[]string) func(string) *series {
	return func(v string) *series {
		*made = append(*made, v)
		return &series{value: v}
	}
}

// values returns the values Each reports, sorted.
func values[S any](l *Set[S]) []string {
	var vs []string
	l.Each(func(v string, _ S) { vs = append(vs, v) })
	sort.Strings(vs)
	return vs
}

func TestWithoutClassOrAllowlistTheLabelIsOff(t *testing.T) {
	var made []string
	l := New(nil, nil, 0, newSeries(&made))
	assert.False(t, l.Enabled())
	for _, key := range []string{"a", "b", ""} {
		s, v := l.Series(key)
		assert.Equal(t, "", v)
		assert.Equal(t, "", s.value)
	}
	assert.Equal(t, []string{""}, made, "one series, made once")
	assert.Equal(t, []string{""}, values(l))
}

func TestClassMapsKeysAndEmptyOrPanickingClassesGoToOther(t *testing.T) {
	var made []string
	class := func(key string) string {
		switch {
		case key == "boom":
			panic("bad mapping")
		case strings.HasPrefix(key, "tenant-"):
			return strings.SplitN(key, "/", 2)[0]
		}
		return ""
	}
	l := New(class, nil, 0, newSeries(&made))
	require.True(t, l.Enabled())
	for key, want := range map[string]string{
		"tenant-1/a": "tenant-1", "tenant-1/b": "tenant-1", "tenant-2/a": "tenant-2",
		"unclassed": Other, "boom": Other,
	} {
		s, v := l.Series(key)
		assert.Equal(t, want, v, key)
		assert.Equal(t, want, s.value, key)
	}
	assert.ElementsMatch(t, []string{"tenant-1", "tenant-2", Other}, made, "one series per value")
	assert.Equal(t, []string{Other, "tenant-1", "tenant-2"}, values(l))
}

func TestAllowlistKeepsOnlyItsValues(t *testing.T) {
	var made []string
	l := New(nil, []string{"gold", "silver"}, 0, newSeries(&made))
	for key, want := range map[string]string{"gold": "gold", "silver": "silver", "bronze": Other} {
		_, v := l.Series(key)
		assert.Equal(t, want, v, key)
	}
	assert.Equal(t, []string{Other, "gold", "silver"}, values(l))
}

// TestCapSendsLaterValuesToOther: values are admitted first come, first
// served, up to max; later ones share Other, and an admitted value keeps
// its own series after the cap is reached.
func TestCapSendsLaterValuesToOther(t *testing.T) {
	var made []string
	l := New(func(k string) string { return k }, nil, 3, newSeries(&made))
	for _, key := range []string{"a", "b", "c", "d", "e", "a"} {
		l.Series(key)
	}
	for key, want := range map[string]string{"a": "a", "c": "c", "d": Other, "z": Other} {
		_, v := l.Series(key)
		assert.Equal(t, want, v, key)
	}
	assert.Equal(t, []string{Other, "a", "b", "c"}, values(l))
	assert.Len(t, made, 4, "no series made twice")
}

func TestDefaultMaxApplies(t *testing.T) {
	var made []string
	l := New(func(k string) string { return k }, nil, 0, newSeries(&made))
	for i := range DefaultMax + 10 {
		l.Series(fmt.Sprint(i))
	}
	assert.Len(t, values(l), DefaultMax+1, "DefaultMax values and Other")
}

// TestConcurrentSeriesMakeEachValueOnce: racing callers agree on one
// series per value, and the cap holds exactly.
func TestConcurrentSeriesMakeEachValueOnce(t *testing.T) {
	var mu sync.Mutex
	counts := map[string]int{}
	l := New(func(k string) string { return k }, nil, 8, func(v string) *series {
		mu.Lock()
		counts[v]++
		mu.Unlock()
		return &series{value: v}
	})
	var wg sync.WaitGroup
	got := make([]map[string]*series, 4)
	for w := range got {
		got[w] = map[string]*series{}
		wg.Go(func() {
			for i := range 64 {
				s, v := l.Series(fmt.Sprint(i % 16))
				got[w][v] = s
			}
		})
	}
	wg.Wait()
	for v, n := range counts {
		assert.Equal(t, 1, n, "series for %q made %d times", v, n)
	}
	assert.Len(t, values(l), 9, "8 values and Other")
	for _, m := range got[1:] {
		for v, s := range m {
			assert.Same(t, got[0][v], s, "value %q", v)
		}
	}
}

package httpgc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

func TestTheStreamSendsASnapshotAtOnceThenEveryIntervalAndHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{Interval: time.Second, Heartbeat: 15 * time.Second})
		c := watch(f.h, nil)
		defer c.leave()
		synctest.Wait()
		code, header := c.rec.status()
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, "text/event-stream", header.Get("Content-Type"))
		assert.Equal(t, []string{"1"}, c.ids(), "a snapshot at once")

		evs, _ := c.rec.events()
		var snap map[string]any
		require.NoError(t, json.Unmarshal([]byte(evs[0].data), &snap))
		assert.Equal(t, []string{"groups", "history", "nextMs", "stats"}, keys(snap))
		assert.Equal(t, 1000.0, snap["nextMs"], "the next snapshot comes in an Interval")
		assert.Equal(t, 3.0, snap["stats"].(map[string]any)["groups"])
		assert.ElementsMatch(t, []string{"a", "b", "c"}, groupNames(t, snap))

		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"1", "2", "3", "4"}, c.ids(), "one per interval, ids in order")
		_, comments := c.rec.events()
		assert.Empty(t, comments)

		time.Sleep(12 * time.Second)
		synctest.Wait()
		_, comments = c.rec.events()
		assert.Equal(t, []string{"heartbeat"}, comments, "a heartbeat comment every 15s")
		assert.Len(t, c.ids(), 16)
	})
}

func TestAReconnectGetsTheCurrentSnapshotAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{Interval: time.Second})
		first := watch(f.h, nil)
		defer first.leave()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		require.Equal(t, []string{"1", "2", "3", "4"}, first.ids())

		again := watch(f.h, nil, "Last-Event-ID", "2")
		defer again.leave()
		synctest.Wait() // no time passes
		assert.Equal(t, []string{"4"}, again.ids(), "the current snapshot, with no replay")
	})
}

func TestASlowClientGetsTheLatestSnapshotOnlyAndHoldsNoOneUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{Interval: time.Second})
		fast := watch(f.h, nil)
		defer fast.leave()
		slowRec := newRecorder()
		slowRec.hold = make(chan struct{})
		slow := watch(f.h, slowRec)
		defer slow.leave()

		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"1", "2", "3", "4", "5", "6"}, fast.ids(), "the fast client misses nothing")
		close(slowRec.hold)
		synctest.Wait()
		assert.Equal(t, []string{"6"}, slow.ids(), "the slow client skips to the latest")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"6", "7"}, slow.ids())
	})
}

func TestWarningsReachTheStreamWhenTheyChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{Interval: time.Second})
		c := watch(f.h, nil)
		defer c.leave()
		synctest.Wait()
		f.h.PressureWarning(groupconc.PressureWarning{GroupKey: "c", Trigger: groupconc.TriggerBacklogAge, Waiting: 1, At: time.Now()})
		time.Sleep(3 * time.Second)
		synctest.Wait()
		evs, _ := c.rec.events()
		var names []string
		for _, ev := range evs {
			names = append(names, ev.name)
		}
		assert.Equal(t, []string{"snapshot", "snapshot", "warnings", "snapshot", "snapshot"}, names, "sent once, with the next snapshot")
		var list []map[string]any
		require.NoError(t, json.Unmarshal([]byte(evs[2].data), &list))
		require.Len(t, list, 1)
		assert.Equal(t, "c", list[0]["group"])

		late := watch(f.h, nil)
		defer late.leave()
		synctest.Wait()
		evs, _ = late.rec.events()
		require.Len(t, evs, 2, "a new client gets the warnings at once too")
		assert.Equal(t, "warnings", evs[1].name)
	})
}

func TestStreamsBeyondMaxClientsGet503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{MaxClients: 2})
		a, b := watch(f.h, nil), watch(f.h, nil)
		defer b.leave()
		synctest.Wait()
		c := watch(f.h, nil)
		synctest.Wait()
		code, header := c.rec.status()
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.NotEmpty(t, header.Get("Retry-After"))
		<-c.done
		a.leave()
		d := watch(f.h, nil)
		defer d.leave()
		synctest.Wait()
		code, _ = d.rec.status()
		assert.Equal(t, http.StatusOK, code, "a freed slot is taken again")
	})
}

func TestOneProducerRunsOnlyWhileSomeoneWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{})
		get(f.h, "/api/groups")
		synctest.Wait()
		assert.Equal(t, 0, producers(), "no goroutine before a stream")
		var clients []*client
		for range 3 {
			clients = append(clients, watch(f.h, nil))
		}
		synctest.Wait()
		assert.Equal(t, 1, producers(), "one producer for every client")
		for _, c := range clients {
			c.leave()
		}
		synctest.Wait() // the producer has closed done; let it return
		assert.Equal(t, 0, producers(), "gone when the last client has left")
		c := watch(f.h, nil)
		synctest.Wait()
		assert.Equal(t, []string{"2"}, c.ids(), "a new producer snapshots at once, with ids that go on")
		c.leave()
	})
}

func TestCloseEndsEveryStreamAndRefusesNewOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{})
		a, b := watch(f.h, nil), watch(f.h, nil)
		synctest.Wait()
		require.NoError(t, f.h.Close())
		<-a.done
		<-b.done
		synctest.Wait() // the producer has closed done; let it return
		assert.Equal(t, 0, producers())
		c := watch(f.h, nil)
		<-c.done
		code, _ := c.rec.status()
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, http.StatusOK, get(f.h, "/api/stats").Code, "the rest is still served")
	})
}

func TestAHeadOfTheStreamOpensNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{})
		w := serve(f.h, request(http.MethodHead, "/api/events", ""))
		synctest.Wait()
		assert.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
		assert.Equal(t, 0, producers())
	})
}

// 8 clients watching for a minute hold steady memory. In fake time, so the
// minute takes none.
func TestEightStreamsForAMinuteHoldSteadyMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
		gate := adaptertest.NewGate(t)
		for i := range 200 {
			adaptertest.Submit(t, e, fmt.Sprintf("tenant-%03d", i), gate.Task)
			adaptertest.Submit(t, e, fmt.Sprintf("tenant-%03d", i), gate.Task)
		}
		gate.WaitStarted(200)
		h, err := httpgc.New(e, httpgc.Options{})
		require.NoError(t, err)
		var clients []*client
		for range 8 {
			rec := newRecorder()
			rec.discard = true
			clients = append(clients, watch(h, rec))
		}
		heap := func() uint64 {
			synctest.Wait()
			// Twice, so that what sync.Pools hold is dropped (the first GC
			// moves it to their victim caches). Otherwise the pooled
			// buffers of the moment move the figure by ±200 KiB.
			runtime.GC()
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		time.Sleep(5 * time.Second)
		start, startGoroutines := heap(), runtime.NumGoroutine()
		time.Sleep(55 * time.Second)
		end, endGoroutines := heap(), runtime.NumGoroutine()
		t.Logf("heap after 5s %d B, after 60s %d B; each client got %d B", start, end, clients[0].rec.written())
		assert.Less(t, int64(end)-int64(start), int64(256<<10), "the heap grew by more than 256 KiB over 55s")
		// NumGoroutine counts the whole process, where a goroutine of an
		// earlier test may still be ending: the streams must add none.
		assert.LessOrEqual(t, endGoroutines, startGoroutines, "goroutines after 60s")
		for _, c := range clients {
			assert.Greater(t, c.rec.written(), 60*20000, "61 snapshots of 200 rows each")
			c.leave()
		}
		h.Close()
	})
}

// A server's WriteTimeout counts from the request's start; the stream
// moves its write deadline before each write, so it outlives it. Real
// time and a real connection: the deadline is the connection's.
func TestTheStreamOutlivesTheServersWriteTimeout(t *testing.T) {
	f := newFixture(t, httpgc.Options{Interval: 100 * time.Millisecond})
	srv := httptest.NewUnstartedServer(f.h)
	srv.Config.WriteTimeout = 250 * time.Millisecond
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/events", nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	ids := 0
	for sc.Scan() && ids < 10 { // 10 snapshots take 900ms
		if strings.HasPrefix(sc.Text(), "id: ") {
			ids++
		}
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 10, ids)
}

// With a DisplayKey a read of a name takes a pass over every group, as a
// write does: a group the stream does not show (idle, or past Rows) may
// share the name. Two groups shown alike answer 409, with a stream open
// or not, before one and after it.
func TestWithADisplayKeyAReadOfANameTwoGroupsShareIsAConflict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{DisplayKey: func(key string) string { return strings.TrimSuffix(key, "~") }})
		adaptertest.Submit(t, f.e, "b~", adaptertest.OK).Await(t.Context()) // idle, shown as b
		assert.Equal(t, http.StatusConflict, get(f.h, "/api/groups/b").Code, "no stream yet")
		c := watch(f.h, nil)
		synctest.Wait() // its frame shows b, not b~
		assert.Equal(t, http.StatusConflict, get(f.h, "/api/groups/b").Code, "a stream open")
		assert.Equal(t, http.StatusConflict, get(f.h, "/api/groups/b/explain").Code, "a stream open")
		assert.Equal(t, http.StatusOK, get(f.h, "/api/groups/a").Code, "a name of one group")
		c.leave()
		assert.Equal(t, http.StatusConflict, get(f.h, "/api/groups/b").Code, "after the stream")
	})
}

// Close ends a stream whose write waits for a client that stopped reading.
// It moves the write's deadline to now. So http.Server.Shutdown, called
// next, need not wait for the write's own timeout.
func TestCloseEndsAStreamWhoseWriteWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{Interval: time.Second})
		rec := newRecorder()
		rec.hold = make(chan struct{})
		defer close(rec.hold)
		c := watch(f.h, rec)
		synctest.Wait() // the stream's first write waits
		require.NoError(t, f.h.Close())
		synctest.Wait()
		select {
		case <-c.done:
		default:
			t.Error("the stream still waits in its write after Close")
		}
	})
}

package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestTheProgramRunsToTheEnd(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	want := `acme's third call: ResourceExhausted, "grpcgc: call rejected by group \"acme\": group_queue_full", pushback [100] ms
running: acme 2, globex 1
a second stream: ResourceExhausted, rejected by the client: true
server: 4 calls succeeded, 1 rejected; client: 0 streams now
`
	if got := out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

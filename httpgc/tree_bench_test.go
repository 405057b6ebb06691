package httpgc_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// BenchmarkSnapshotTree is BenchmarkSnapshot with 10 000 users in 100
// tenants ("t-007/u-00042"), one user in a hundred busy, beside 10 000
// flat keys loaded alike. A tenant's stats sum up its subtree, which it
// lists. By oldest wait a tenant comes before its users, so the list holds
// the ancestors already. With a prefix that its tenant does not match, a
// user's tenant is looked up.
func BenchmarkSnapshotTree(b *testing.B) {
	for _, shape := range []string{"flat", "tree"} {
		// A user runs one task at a time, a tenant two: its busy user
		// holds one, and its others finish through the other.
		e := adaptertest.NewExecutor(b, groupconc.NewPolicyBuilder().ParentSeparator("/").
			ConcurrencyResolver(func(key string) int {
				if strings.Contains(key, "u-") {
					return 1
				}
				return 2
			}))
		sep := map[string]string{"flat": "-", "tree": "/"}[shape]
		loadGroups(b, e, 10_000, func(i int) string { return fmt.Sprintf("t-%03d%su-%05d", i/100, sep, i) })
		h, err := httpgc.New(e, httpgc.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close() })
		for _, query := range []string{"/api/groups?limit=100", "/api/groups?limit=100&sort=key&prefix=t-000" + sep} {
			b.Run(fmt.Sprintf("%s/%s", shape, query[len("/api/groups?"):]), func(b *testing.B) {
				req := request(http.MethodGet, query, "")
				b.ReportAllocs()
				for b.Loop() {
					if w := serve(h, req); w.Code != http.StatusOK {
						b.Fatal(w.Code, w.Body)
					}
				}
			})
		}
	}
}

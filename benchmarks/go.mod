module github.com/kobe/groupconc/benchmarks

go 1.25.0

// The replace directives are for development in this repository: a module
// that imports this one ignores them and gets the versions required below.
replace github.com/kobe/groupconc => ../

require (
	github.com/alitto/pond/v2 v2.7.1
	github.com/kobe/groupconc v0.3.0
	github.com/panjf2000/ants/v2 v2.12.1
	github.com/sourcegraph/conc v0.3.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.22.0
)

require (
	go.uber.org/atomic v1.7.0 // indirect
	go.uber.org/multierr v1.9.0 // indirect
)

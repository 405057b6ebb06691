module github.com/kobe/groupconc/redisgc

go 1.25.0

// The replace directives are for development in this repository: a module
// that imports this one ignores them and gets the versions required below.
replace github.com/kobe/groupconc => ../

require (
	github.com/kobe/groupconc v0.3.0
	github.com/redis/go-redis/v9 v9.22.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)

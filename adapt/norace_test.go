//go:build !race

package adapt_test

const raceEnabled = false

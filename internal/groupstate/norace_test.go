//go:build !race

package groupstate

const raceEnabled = false

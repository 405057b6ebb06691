package adapt

import "time"

// orDuration, orCount and orFraction set a field to its default if it is
// zero or out of range. A fraction is in (0, 1), or in (0, 1] if one is
// set.
func orDuration(v *time.Duration, d time.Duration) {
	if *v <= 0 {
		*v = d
	}
}

func orCount(v *int, d int) {
	if *v <= 0 {
		*v = d
	}
}

func orFraction(v *float64, d float64, one bool) {
	if !(*v > 0 && (*v < 1 || one && *v == 1)) {
		*v = d
	}
}

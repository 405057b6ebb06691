package otelgc_test

import (
	"math"
	"testing"

	"github.com/kobe/groupconc/otelgc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name string
		o    otelgc.Options
		want string // "" means valid
	}{
		{"zero value", otelgc.Options{}, ""},
		{"everything", otelgc.Options{ExecutorName: "x", GroupAllowlist: []string{"a"}, MaxGroupValues: 1, Buckets: []float64{0.1, 1}}, ""},
		{"negative cap", otelgc.Options{MaxGroupValues: -1}, "otelgc: MaxGroupValues -1 is negative"},
		{"empty buckets", otelgc.Options{Buckets: []float64{}}, "otelgc: Buckets is empty"},
		{"unsorted buckets", otelgc.Options{Buckets: []float64{1, 1}}, "otelgc: Buckets are not strictly increasing at index 1"},
		{"+Inf bucket", otelgc.Options{Buckets: []float64{1, math.Inf(1)}}, "otelgc: Buckets[1] is +Inf"},
		{"NaN bucket", otelgc.Options{Buckets: []float64{math.NaN()}}, "otelgc: Buckets[0] is NaN"},
		{"-Inf bucket", otelgc.Options{Buckets: []float64{math.Inf(-1), 1}}, "otelgc: Buckets[0] is -Inf"},
		{"two errors", otelgc.Options{MaxGroupValues: -2, Buckets: []float64{2, 1}},
			"otelgc: MaxGroupValues -2 is negative\notelgc: Buckets are not strictly increasing at index 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := otelgc.New(tt.o)
			if tt.want == "" {
				require.NoError(t, err)
				assert.NotNil(t, m)
				return
			}
			assert.EqualError(t, err, tt.want)
			assert.Nil(t, m)
		})
	}
}

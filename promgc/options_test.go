package promgc_test

import (
	"math"
	"testing"

	"github.com/kobe/groupconc/promgc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name string
		o    promgc.Options
		want string // "" means valid
	}{
		{"zero value", promgc.Options{}, ""},
		{"everything", promgc.Options{ExecutorName: "x", GroupAllowlist: []string{"a"}, MaxGroupValues: 1, Buckets: []float64{0.1, 1}}, ""},
		{"negative cap", promgc.Options{MaxGroupValues: -1}, "promgc: MaxGroupValues -1 is negative"},
		{"empty buckets", promgc.Options{Buckets: []float64{}}, "promgc: Buckets is empty"},
		{"unsorted buckets", promgc.Options{Buckets: []float64{1, 1}}, "promgc: Buckets are not strictly increasing at index 1"},
		{"last bucket +Inf", promgc.Options{Buckets: []float64{1, math.Inf(1)}}, ""},
		{"+Inf bucket not last", promgc.Options{Buckets: []float64{math.Inf(1), 2}}, "promgc: Buckets[0] is +Inf"},
		{"NaN bucket", promgc.Options{Buckets: []float64{1, math.NaN()}}, "promgc: Buckets[1] is NaN"},
		{"-Inf bucket", promgc.Options{Buckets: []float64{math.Inf(-1), 1}}, "promgc: Buckets[0] is -Inf"},
		{"-Inf bucket alone", promgc.Options{Buckets: []float64{math.Inf(-1)}}, "promgc: Buckets[0] is -Inf"},
		{"two errors", promgc.Options{MaxGroupValues: -2, Buckets: []float64{2, 1}},
			"promgc: MaxGroupValues -2 is negative\npromgc: Buckets are not strictly increasing at index 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := promgc.New(tt.o)
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

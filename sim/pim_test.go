package sim

import (
	"math"
	"testing"
)

var neupimsPIM = PIMParams{TileCycles: 184, GWriteCycles: 100, PageElems: 512, Banks: 32}

// Worked values of Algorithm 1, ceil version per device and per layer, computed by hand.
func TestMHALatencyWorkedValues(t *testing.T) {
	models := []struct {
		name  string
		heads int
	}{{"7B", 8}, {"13B", 10}, {"30B", 14}, {"175B", 12}}
	want := map[int][4]int{
		1:    {7256, 9212, 12840, 10884},
		32:   {7256, 9212, 12840, 10884},
		64:   {7624, 9764, 13576, 11436},
		128:  {8360, 10868, 15048, 12540},
		300:  {10568, 14180, 19464, 15852},
		512:  {12776, 17492, 23880, 19164},
		513:  {19832, 26404, 36320, 29748},
		1024: {25352, 34684, 47360, 38028},
		2048: {50504, 69068, 94320, 75756},
	}
	for seq, row := range want {
		for i, m := range models {
			l, a := neupimsPIM.MHALatency(seq, m.heads, 128)
			if got := l + a; got != row[i] {
				t.Errorf("%s seq %d: got %d cycles, want %d", m.name, seq, got, row[i])
			}
		}
	}
}

// The literal real-valued version for 7B: 986 cycles at L = 32 and 7,569 at L = 300;
// it meets the ceil version at multiples of 512.
func TestMHALatencyLiteral(t *testing.T) {
	for _, c := range []struct {
		seq  int
		want float64
	}{{32, 986}, {300, 7569}} {
		got := neupimsPIM.MHALatencyLiteral(c.seq, 8, 128)
		if math.Abs(got-c.want) > 1 {
			t.Errorf("literal seq %d: got %.1f, want %.0f", c.seq, got, c.want)
		}
	}
	l, a := neupimsPIM.MHALatency(1024, 8, 128)
	lit := neupimsPIM.MHALatencyLiteral(1024, 8, 128)
	if math.Abs(float64(l+a)-lit) > 1 {
		t.Errorf("at 1024 ceil %d and literal %.1f should meet", l+a, lit)
	}
}

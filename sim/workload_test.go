package sim

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The generator's truncated log-normal keeps the dataset's mean and spread.
func TestLengthDistMatchesMeanAndStd(t *testing.T) {
	for _, c := range []struct {
		mean, std float64
		lo, hi    int
	}{{80.3, 227, 1, 2047}, {295, 150, 1, 2047}, {12.1, 5, 1, 2047}, {55.8, 50, 1, 2047}} {
		d := newLengthDist(c.mean, c.std, c.lo, c.hi, false)
		r := rand.New(rand.NewPCG(1, 2))
		var sum, sq float64
		n := 200000
		for range n {
			v := float64(d.sample(r))
			if v < float64(c.lo) || v > float64(c.hi) {
				t.Fatalf("sample %v outside [%d,%d]", v, c.lo, c.hi)
			}
			sum += v
			sq += v * v
		}
		mean := sum / float64(n)
		std := math.Sqrt(sq/float64(n) - mean*mean)
		if math.Abs(mean-c.mean)/c.mean > 0.03 {
			t.Errorf("mean %.1f, want %.1f", mean, c.mean)
		}
		// Truncation trims the tail, so the spread may fall below the untruncated target,
		// but it must stay of the same size.
		if std < 0.6*c.std || std > 1.15*c.std {
			t.Errorf("std %.1f, want about %.1f", std, c.std)
		}
	}
}

// sampleMoments draws n lengths of d and returns their mean, standard deviation and
// largest value.
func sampleMoments(d lengthDist, n int) (mean, std float64, top int) {
	r := rand.New(rand.NewPCG(1, 2))
	var sum, sq float64
	for range n {
		v := d.sample(r)
		top = max(top, v)
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	mean = sum / float64(n)
	return mean, math.Sqrt(sq/float64(n) - mean*mean), top
}

// A bound that trims the tail (the longest generation a dataset allows) narrows a
// log-normal fitted to the mean alone; with MatchStd the spread is refitted so that the
// bounded lengths keep both the mean and the standard deviation, as L3's Table 4 states
// them for OpenR1-Math-220k (12,684.1 ± 8,464.6 output tokens, at most two generations
// of 16,384).
func TestLengthDistMatchesStdWithinBound(t *testing.T) {
	const mean, std, hi = 12684.1, 8464.6, 32768
	narrow, _, _ := sampleMoments(newLengthDist(mean, std, 1, hi, false), 400000)
	_, narrowStd, _ := sampleMoments(newLengthDist(mean, std, 1, hi, false), 400000)
	if math.Abs(narrow-mean)/mean > 0.01 || narrowStd > 0.9*std {
		t.Fatalf("fitted to the mean alone: %.1f ± %.1f; want the mean kept and the spread narrowed below %.1f", narrow, narrowStd, 0.9*std)
	}
	got, gotStd, top := sampleMoments(newLengthDist(mean, std, 1, hi, true), 400000)
	if math.Abs(got-mean)/mean > 0.01 || math.Abs(gotStd-std)/std > 0.01 || top > hi {
		t.Fatalf("refitted: %.1f ± %.1f, longest %d; want %.1f ± %.1f within %d", got, gotStd, top, mean, std, hi)
	}
	if ok, _ := FitLengths(mean, std, 1, hi); !ok {
		t.Fatal("FitLengths: no fit within the bound")
	}
	// One generation of 16,384 tokens cannot hold Table 4's spread: the widest log-normal
	// with that mean has about a third of it.
	ok, widest := FitLengths(mean, std, 1, 16384)
	if ok || widest > 0.4*std || widest < 0.2*std {
		t.Fatalf("within 16,384: fit %v, widest %.1f; want none, about a third of %.1f", ok, widest, std)
	}
	// Far from the bound, refitting changes almost nothing.
	plain, _, _ := sampleMoments(newLengthDist(6366.7, 4662.9, 1, 131072, false), 100000)
	refit, _, _ := sampleMoments(newLengthDist(6366.7, 4662.9, 1, 131072, true), 100000)
	if math.Abs(plain-refit)/plain > 0.002 {
		t.Fatalf("far from the bound: mean %.1f fitted to the mean, %.1f refitted", plain, refit)
	}
}

func TestReadTrace(t *testing.T) {
	tr, shift, err := ReadTrace(strings.NewReader("arrival_s,input_len,output_len\n0,10,5\n# comment\n0.5, 20, 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 2 || tr[1].Arrival != 500*Millisecond || tr[1].InputLen != 20 || tr[1].OutputLen != 7 || shift != 0 {
		t.Fatalf("got %+v, shift %g", tr, shift)
	}
	bad := []struct{ in, want string }{
		{"0,10\n", "line 1: want 3 fields"},
		{"0,x,5\n", `line 1:3: input_len "x" is not a whole number`},
		{"0,10,0\n", `line 1:6: output_len "0"`},
		{"-1,10,5\n", `line 1:1: arrival_s "-1"`},
		{"1,10,5\n0,10,5\n", "earlier than the previous row"},
		{"arrival_s,input_len,output_len\n", "no requests"},
		{"0,\"10,5\n", "line 1"},
		{"1700000000,10,5\n1800000000,10,5\n", "line 2: arrival_s 1.8e+09 is 1e+08 s after the first request's 1.7e+09; the simulated clock holds"},
	}
	for _, b := range bad {
		_, _, err := ReadTrace(strings.NewReader(b.in))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: got %v, want %q", b.in, err, b.want)
		}
	}
}

// A trace in Unix time starts at its first request: every arrival keeps its distance
// from it, to the microsecond, and the shift is reported; a trace the clock holds as it is
// is not shifted.
func TestReadTraceShiftsLateArrivals(t *testing.T) {
	tr, shift, err := ReadTrace(strings.NewReader("1700000000.25,10,5\n1700000000.25,11,5\n1700000003.5,12,6\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Time{0, 0, 3250 * Millisecond}
	for i, r := range tr {
		if d := r.Arrival - want[i]; d < -Microsecond || d > Microsecond {
			t.Fatalf("request %d arrives at %v, want %v", i+1, r.Arrival, want[i])
		}
	}
	if shift != 1700000000.25 {
		t.Fatalf("shift %g, want the first arrival", shift)
	}
	if _, shift, err := ReadTrace(strings.NewReader("4000000,10,5\n")); err != nil || shift != 0 {
		t.Fatalf("a trace within the clock: shift %g, %v", shift, err)
	}
}

func FuzzReadTrace(f *testing.F) {
	f.Add("arrival_s,input_len,output_len\n0,10,5\n0.5,20,7\n")
	f.Add("0,1,1\n")
	f.Add("1e308,1,1\n")
	f.Add("1700000000,1,1\n1700000001,1,1\n")
	f.Fuzz(func(t *testing.T, s string) {
		tr, shift, err := ReadTrace(strings.NewReader(s))
		if err != nil {
			return
		}
		var last Time
		for _, r := range tr {
			if r.InputLen < 1 || r.OutputLen < 1 || r.Arrival < last || r.Arrival >= math.MaxInt64/2 {
				t.Fatalf("accepted a bad row: %+v", r)
			}
			last = r.Arrival
		}
		if shift < 0 || (shift > 0 && tr[0].Arrival != 0) {
			t.Fatalf("shift %g with the first request at %v", shift, tr[0].Arrival)
		}
	})
}

// A stream names its dataset (by its name when it has no display name), fixed lengths or
// a trace, the requests a trace caps, and its arrivals; a closed loop says none.
func TestWorkloadStream(t *testing.T) {
	ds := Dataset{Name: "sharegpt", Display: "ShareGPT"}
	trace := make([]TraceRequest, 3)
	for _, c := range []struct {
		w        Workload
		dataset  string
		requests int
		arrival  string
	}{
		{Workload{Dataset: ds, Requests: 100}, "ShareGPT", 100, ""},
		{Workload{Dataset: Dataset{Name: "alpaca"}, Requests: 5}, "alpaca", 5, ""},
		{Workload{Dataset: ds, Requests: 100, InputLen: 128, OutputLen: 64}, "fixed 128/64 tokens", 100, ""},
		{Workload{Dataset: ds, Requests: 100, Arrival: ArrivalPoisson, Rate: 2.5}, "ShareGPT", 100, "Poisson 2.5/s"},
		{Workload{Dataset: ds, Requests: 100, Trace: trace}, "request trace", 3, "arrivals from the trace"},
	} {
		d, n, a := c.w.Stream()
		if d != c.dataset || n != c.requests || a != c.arrival {
			t.Errorf("%+v: Stream() = %q, %d, %q; want %q, %d, %q", c.w, d, n, a, c.dataset, c.requests, c.arrival)
		}
	}
}

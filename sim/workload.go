package sim

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Dataset is a request-length distribution. Input and output lengths are each drawn from
// the dataset's empirical quantiles when it has them (InBins, OutBins: the means of
// equally likely slices of the sorted data, one drawn uniformly), otherwise from a
// log-normal truncated to [Min, Max] whose mean and standard deviation match the
// dataset's published statistics (docs/architecture.md).
type Dataset struct {
	Name            string
	Display         string
	InMean, InStd   float64
	InMin, InMax    int
	OutMean, OutStd float64
	OutMin, OutMax  int
	MaxSeqLen       int   // cap on the sequence (0 = none); see LiveCap
	InBins, OutBins []int // empirical quantiles: equally likely bin means (nil: the log-normal)
	// LiveCap makes MaxSeqLen cap the live context instead of the request: a request
	// generates its whole output while its KV cache and attention keep at most MaxSeqLen
	// tokens, as the NeuPIMs authors' trace generator counts a request's length
	// (trace-generator/get_distributions.py, Request.get_seq_len). Without it input +
	// output are cut to MaxSeqLen, as a serving system ends a request at its context limit.
	LiveCap bool
	// MatchStd fits the truncated log-normals to the standard deviations too: where a
	// bound trims the tail (the longest generation a dataset's generator allowed), the
	// spread is widened so that the lengths keep both published statistics, not only the
	// mean.
	MatchStd bool
}

// TraceRequest is one row of a request trace.
type TraceRequest struct {
	Arrival   Time
	InputLen  int
	OutputLen int
}

// lengthDist samples integers from a truncated log-normal.
type lengthDist struct {
	mu, sigma float64
	lo, hi    int
	pLo, pHi  float64 // normal CDF of the truncation bounds on the log scale
}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// phiBetween is P(x1 ≤ Z ≤ x2) for a standard normal Z, from whichever tail keeps its
// digits.
func phiBetween(x1, x2 float64) float64 {
	if x1 > 0 {
		return normCDF(-x1) - normCDF(-x2)
	}
	return normCDF(x2) - normCDF(x1)
}

// truncMoments is the mean and standard deviation of a log-normal(mu, sigma) truncated to
// [a, b]: E[X^k] = exp(k·mu + k²σ²/2)·P(ln a ≤ N(mu + kσ², σ) ≤ ln b)/P(ln a ≤ N(mu, σ) ≤ ln b).
func truncMoments(mu, sigma, a, b float64) (mean, std float64) {
	la, lb := math.Log(a), math.Log(b)
	s2 := sigma * sigma
	den := phiBetween((la-mu)/sigma, (lb-mu)/sigma)
	if den <= 0 {
		return math.Exp(mu), 0
	}
	m1 := math.Exp(mu+s2/2) * phiBetween((la-mu-s2)/sigma, (lb-mu-s2)/sigma) / den
	m2 := math.Exp(2*mu+2*s2) * phiBetween((la-mu-2*s2)/sigma, (lb-mu-2*s2)/sigma) / den
	return m1, math.Sqrt(max(0, m2-m1*m1))
}

// fitMu is the location that gives a log-normal of spread sigma, truncated to [a, b], the
// mean target (the truncated mean grows with the location).
func fitMu(sigma, target, a, b float64) float64 {
	l, h := math.Log(a)-10*sigma, math.Log(b)+10*sigma
	for range 100 {
		m := (l + h) / 2
		if mean, _ := truncMoments(m, sigma, a, b); mean < target {
			l = m
		} else {
			h = m
		}
	}
	return (l + h) / 2
}

// maxSigma is the widest spread fitSigma tries.
const maxSigma = 8

// fitSigma is the spread whose log-normal, located to keep the mean (fitMu) and truncated
// to [a, b], has standard deviation std: the truncated standard deviation grows with the
// spread, up to the widest spread whose location still reaches the mean (a mean near the
// bound needs the density to rise towards it, which a wide spread flattens). ok is false
// when that widest one falls short; widest is the standard deviation it reaches.
func fitSigma(mean, std, a, b float64) (sigma float64, ok bool, widest float64) {
	at := func(s float64) (sd float64, fits bool) {
		m, sd := truncMoments(fitMu(s, mean, a, b), s, a, b)
		return sd, math.Abs(m-mean) <= 1e-9*mean
	}
	top := float64(maxSigma)
	if _, fits := at(top); !fits {
		l := 0.0
		for range 60 {
			m := (l + top) / 2
			if _, fits := at(m); fits {
				l = m
			} else {
				top = m
			}
		}
		top = l
	}
	if widest, _ = at(top); widest < std {
		return top, false, widest
	}
	l, h := 0.0, top
	for range 60 {
		m := (l + h) / 2
		if sd, _ := at(m); sd < std {
			l = m
		} else {
			h = m
		}
	}
	return (l + h) / 2, true, widest
}

// lengthBounds is the interval on which lengths lo … hi, rounded from a continuous draw,
// are truncated, and the mean clamped into it.
func lengthBounds(mean float64, lo, hi int) (a, b, target float64) {
	a, b = math.Max(float64(lo)-0.5, 0.5), float64(hi)+0.5
	return a, b, math.Min(math.Max(mean, a), b)
}

// FitLengths reports whether a log-normal truncated to [lo, hi] can have both mean and
// std (Dataset.MatchStd), and otherwise the largest standard deviation one with that mean
// reaches.
func FitLengths(mean, std float64, lo, hi int) (ok bool, widest float64) {
	lo = max(lo, 1)
	if std <= 0 || mean <= 0 || hi <= lo {
		return true, 0
	}
	a, b, target := lengthBounds(mean, lo, hi)
	_, ok, widest = fitSigma(target, std, a, b)
	return ok, widest
}

// newLengthDist fits a log-normal to mean and std, then shifts its location so that the
// truncated distribution keeps the target mean. With matchStd the spread is refitted too,
// so that the truncated distribution keeps the standard deviation as well (as far as one
// can: the widest when none has it).
func newLengthDist(mean, std float64, lo, hi int, matchStd bool) lengthDist {
	lo = max(lo, 1)
	hi = max(hi, lo)
	d := lengthDist{lo: lo, hi: hi}
	if std <= 0 || mean <= 0 || lo == hi {
		d.sigma = 0
		d.mu = math.Log(math.Min(math.Max(mean, float64(lo)), float64(hi)))
		return d
	}
	a, b, target := lengthBounds(mean, lo, hi)
	d.sigma = math.Sqrt(math.Log(1 + (std/mean)*(std/mean)))
	if matchStd {
		d.sigma, _, _ = fitSigma(target, std, a, b)
	}
	d.mu = fitMu(d.sigma, target, a, b)
	d.pLo = normCDF((math.Log(a) - d.mu) / d.sigma)
	d.pHi = normCDF((math.Log(b) - d.mu) / d.sigma)
	return d
}

func (d lengthDist) sample(r *rand.Rand) int {
	if d.sigma == 0 {
		return int(math.Round(math.Exp(d.mu)))
	}
	u := d.pLo + r.Float64()*(d.pHi-d.pLo)
	u = math.Min(math.Max(u, 1e-15), 1-1e-15)
	z := math.Sqrt2 * math.Erfinv(2*u-1)
	v := int(math.Round(math.Exp(d.mu + d.sigma*z)))
	return min(max(v, d.lo), d.hi)
}

// binned samples one of equally likely values: an empirical quantile table.
type binned []int

func (b binned) sample(r *rand.Rand) int { return b[r.IntN(len(b))] }

// lengthSampler draws one length.
type lengthSampler interface{ sample(*rand.Rand) int }

// generator produces the requests of a workload in arrival order.
type generator struct {
	rng      *rand.Rand
	in, out  lengthSampler
	maxSeq   int
	window   int // live-context cap handed to each request (Dataset.LiveCap), 0 = none
	fixedIn  int
	fixedOut int
	rate     float64 // Poisson arrivals per second; 0 = all at time 0
	trace    []TraceRequest
	next     int
	clock    Time
}

func newGenerator(w Workload, rng *rand.Rand) *generator {
	g := &generator{rng: rng, maxSeq: w.Dataset.MaxSeqLen, fixedIn: w.InputLen, fixedOut: w.OutputLen, trace: w.Trace}
	if w.Arrival == ArrivalPoisson {
		g.rate = w.Rate
	}
	ds := w.Dataset
	g.in, g.out = newLengthDist(ds.InMean, ds.InStd, ds.InMin, ds.InMax, ds.MatchStd), newLengthDist(ds.OutMean, ds.OutStd, ds.OutMin, ds.OutMax, ds.MatchStd)
	if len(ds.InBins) > 0 {
		g.in = binned(ds.InBins)
	}
	if len(ds.OutBins) > 0 {
		g.out = binned(ds.OutBins)
	}
	if ds.LiveCap && w.Trace == nil && w.InputLen <= 0 && w.OutputLen <= 0 {
		g.window, g.maxSeq = ds.MaxSeqLen, 0
	}
	return g
}

// request draws the next request (id is assigned by the caller).
func (g *generator) request() (Time, int, int) {
	if g.trace != nil {
		tr := g.trace[g.next%len(g.trace)]
		g.next++
		return tr.Arrival, tr.InputLen, tr.OutputLen
	}
	g.next++
	in, out := g.fixedIn, g.fixedOut
	if in <= 0 {
		in = g.in.sample(g.rng)
	}
	if out <= 0 {
		out = g.out.sample(g.rng)
	}
	if g.maxSeq > 0 && g.fixedIn <= 0 && g.fixedOut <= 0 {
		in = min(in, g.maxSeq-1)
		out = max(1, min(out, g.maxSeq-in))
	}
	if g.rate > 0 {
		g.clock += FromSeconds(g.rng.ExpFloat64() / g.rate)
	}
	return g.clock, in, out
}

// maxTraceSeconds is the latest arrival a trace may give: the simulated clock holds
// about 4.61e6 s (53 days) and FromSeconds clamps beyond.
const maxTraceSeconds = 4.6e6

// ReadTrace reads a request trace in CSV: a header "arrival_s,input_len,output_len" (the
// header is optional) then one request per row. Errors name the line and column.
// Arrival times later than the simulated clock holds (Unix timestamps, say) are taken
// relative to the first request's: shift is then the seconds taken off every arrival,
// and 0 otherwise. A trace longer than the clock holds is refused.
func ReadTrace(r io.Reader) (reqs []TraceRequest, shift float64, err error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	var out []TraceRequest
	var arrivals []float64
	var last float64
	lastLine := 0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, 0, fmt.Errorf("line %d:%d: %v", pe.Line, pe.Column, pe.Err)
			}
			return nil, 0, err
		}
		line, _ := cr.FieldPos(0)
		if len(out) == 0 && len(rec) > 0 && strings.EqualFold(strings.TrimSpace(rec[0]), "arrival_s") {
			continue
		}
		if len(rec) != 3 {
			return nil, 0, fmt.Errorf("line %d: want 3 fields (arrival_s,input_len,output_len), got %d", line, len(rec))
		}
		a, err := strconv.ParseFloat(strings.TrimSpace(rec[0]), 64)
		if err != nil || math.IsNaN(a) || math.IsInf(a, 0) || a < 0 {
			_, col := cr.FieldPos(0)
			return nil, 0, fmt.Errorf("line %d:%d: arrival_s %q is not a time in seconds ≥ 0", line, col, rec[0])
		}
		if a < last {
			_, col := cr.FieldPos(0)
			return nil, 0, fmt.Errorf("line %d:%d: arrival_s %g is earlier than the previous row's %g; sort the trace by arrival", line, col, a, last)
		}
		last, lastLine = a, line
		var lens [2]int
		for i, name := range []string{"input_len", "output_len"} {
			v, err := strconv.Atoi(strings.TrimSpace(rec[i+1]))
			if err != nil || v < 1 || v > 1<<24 {
				_, col := cr.FieldPos(i + 1)
				return nil, 0, fmt.Errorf("line %d:%d: %s %q is not a whole number of tokens between 1 and %d", line, col, name, rec[i+1], 1<<24)
			}
			lens[i] = v
		}
		out = append(out, TraceRequest{InputLen: lens[0], OutputLen: lens[1]})
		arrivals = append(arrivals, a)
	}
	if len(out) == 0 {
		return nil, 0, errors.New("the trace has no requests (want rows of arrival_s,input_len,output_len)")
	}
	if last >= maxTraceSeconds {
		shift = arrivals[0]
		if last-shift >= maxTraceSeconds {
			return nil, 0, fmt.Errorf("line %d: arrival_s %g is %.4g s after the first request's %g; the simulated clock holds %.4g s (about %.0f days)",
				lastLine, last, last-shift, shift, maxTraceSeconds, maxTraceSeconds/86400)
		}
	}
	for i, a := range arrivals {
		out[i].Arrival = FromSeconds(a - shift)
	}
	return out, shift, nil
}

// Sample draws n requests' input and output lengths as a workload of this dataset would,
// so a caller can see the distribution it gets.
func (d Dataset) Sample(n int, seed uint64) (in, out []int) {
	g := newGenerator(Workload{Dataset: d}, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	in, out = make([]int, n), make([]int, n)
	for i := range n {
		_, in[i], out[i] = g.request()
	}
	return in, out
}

// Stream describes a workload's request stream as a comparison shows it: the dataset (or
// the fixed lengths, or "request trace"), how many requests it holds and how they arrive
// ("" for a closed loop).
func (w Workload) Stream() (dataset string, requests int, arrival string) {
	dataset = w.Dataset.Display
	if dataset == "" {
		dataset = w.Dataset.Name
	}
	switch {
	case w.Trace != nil:
		dataset = "request trace"
	case w.InputLen > 0 || w.OutputLen > 0:
		dataset = fmt.Sprintf("fixed %d/%d tokens", w.InputLen, w.OutputLen)
	}
	requests = w.Requests
	switch {
	case w.Trace != nil:
		requests, arrival = min(requests, len(w.Trace)), "arrivals from the trace"
	case w.Arrival == ArrivalPoisson:
		arrival = fmt.Sprintf("Poisson %g/s", w.Rate)
	}
	return dataset, requests, arrival
}

// maxSeqLen is the longest sequence the workload can produce.
func maxSeqLen(c *Config) int {
	w := c.Workload
	if w.Trace != nil {
		m := 0
		for _, t := range w.Trace {
			m = max(m, t.InputLen+t.OutputLen)
		}
		return m
	}
	in, out := w.InputLen, w.OutputLen
	if in <= 0 {
		in = w.Dataset.InMax
	}
	if out <= 0 {
		out = w.Dataset.OutMax
	}
	if ms := w.Dataset.MaxSeqLen; ms > 0 && w.InputLen <= 0 && w.OutputLen <= 0 {
		return min(in+out, ms)
	}
	return in + out
}

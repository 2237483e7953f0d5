package sim

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// This file is the Hermes family's neuron machinery (Hermes, HPCA 2025, §III–§IV): a
// seeded synthetic activation trace per sparse block, the offline neuron mapping, the
// lightweight predictor, the online promotion of hot neurons to the GPU and the
// window-based remapping of cold neurons across DIMMs. Every neuron of the model is
// tracked; the per-token work is one pass over each block's arrays.
//
// A "neuron" is a row of the stacked [W_Q|W_K|W_V] (one input dimension, skipped when the
// ReLU before QKV zeroes it) or one FFN channel (a column of FC1, and of the gate for a
// gated FFN, with the matching row of FC2). The sparse blocks of a token run in order
// QKV(0), MLP(0), QKV(1), …; each block's parents are in the block before it.
//
// Inside a block neurons are stored in descending order of their offline activation
// frequency (rank order), so a bin of the view is a contiguous range and the hottest
// neurons come first. Their native index (the position in the weight matrix) is a seeded
// random permutation of the rank; clusters and the chunked layout use it.

const (
	kindQKV = 0
	kindMLP = 1

	normBits = 12
	normSize = 1 << normBits
	cdfSize  = 4096
	cdfSpan  = 8.0 // the CDF table covers [−cdfSpan, cdfSpan]
	runLen   = 640 // neurons a pass takes at a time (a multiple of the five normals a draw)
)

var (
	// normTab holds the centres of normSize equiprobable cells of N(0,1), rescaled to unit
	// variance: a uniform 12-bit index draws a standard normal.
	normTab [normSize]float32
	cdfTab  [cdfSize + 1]float32
)

func init() {
	var v float64
	for k := range normTab {
		z := math.Sqrt2 * math.Erfinv(2*(float64(k)+0.5)/normSize-1)
		normTab[k] = float32(z)
		v += z * z
	}
	s := float32(1 / math.Sqrt(v/normSize))
	for k := range normTab {
		normTab[k] *= s
	}
	for k := range cdfTab {
		x := -cdfSpan + 2*cdfSpan*float64(k)/cdfSize
		cdfTab[k] = float32(normCDF(x))
	}
}

// phiApprox is the standard normal CDF by table interpolation (error < 1e-5).
func phiApprox(x float32) float32 {
	u := (x + cdfSpan) * (cdfSize / (2 * cdfSpan))
	if u <= 0 {
		return 0
	}
	if u >= cdfSize {
		return 1
	}
	k := int(u)
	f := u - float32(k)
	return cdfTab[k] + f*(cdfTab[k+1]-cdfTab[k])
}

func hash3(a, b, c uint64) uint64 { return splitmix(splitmix(splitmix(a)^b) ^ c) }

// wyrng is a fast sequential generator (wyrand) seeded from a counter hash; it yields
// five 12-bit normals per 64-bit draw.
type wyrng struct {
	s    uint64
	r    uint64
	left uint
}

func (g *wyrng) u64() uint64 {
	var r uint64
	g.s, r = wyrand(g.s)
	return r
}

// wyrand advances a generator state s by one draw: the new state and its 64 bits.
func wyrand(s uint64) (next, r uint64) {
	s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(s, s^0xe7037ed1a0b428db)
	return s, hi ^ lo
}

// skip advances the generator past k 64-bit draws.
func (g *wyrng) skip(k int) { g.s += uint64(k) * 0xa0761d6478bd642f }

func (g *wyrng) normal() float32 {
	if g.left < normBits {
		g.r, g.left = g.u64(), 60
	}
	z := normTab[g.r&(normSize-1)]
	g.r >>= normBits
	g.left -= normBits
	return z
}

// hashNormal is a standard normal drawn from a counter hash.
func hashNormal(h uint64) float32 { return normTab[h&(normSize-1)] }

// powerLaw returns the activation probabilities of n neurons in rank order,
// p(x) = min(0.99, c·x^−α) at x = (r+0.5)/n, with mean rho and the top hotFrac of neurons
// carrying hotShare of the activations. Where no α reaches hotShare (more than
// hotFrac·0.99/hotShare of neurons fire per token, e.g. 20/80 with over 24.75% active),
// it uses the α at which the share reaches 95% of the largest attainable. It also returns
// α and the share reached.
func powerLaw(n int, rho, hotFrac, hotShare float64) ([]float64, float64, float64) {
	// Fit on at most 4096 evenly spaced ranks (the curve is smooth), then fill all n.
	m := min(n, 4096)
	p := make([]float64, m)
	lx := make([]float64, m)
	for r := range lx {
		lx[r] = math.Log((float64(r) + 0.5) / float64(m))
	}
	fill := func(c, a float64) float64 {
		s := 0.0
		lc := math.Log(c)
		for r := range p {
			v := math.Exp(lc - a*lx[r])
			if v > 0.99 {
				v = 0.99
			}
			p[r] = v
			s += v
		}
		return s / float64(len(p))
	}
	// fitC sets p for exponent a with mean rho.
	fitC := func(a float64) {
		lo, hi := 0.0, 1.0
		for fill(hi, a) < rho && hi < 1e12 {
			hi *= 4
		}
		for range 50 {
			m := (lo + hi) / 2
			if fill(m, a) < rho {
				lo = m
			} else {
				hi = m
			}
		}
		fill((lo+hi)/2, a)
	}
	k := max(1, int(hotFrac*float64(m)))
	share := func() float64 {
		var top, all float64
		for r, v := range p {
			all += v
			if r < k {
				top += v
			}
		}
		return top / all
	}
	const aMax = 12.0
	fitC(aMax)
	target := hotShare
	if sup := share(); sup < target {
		target = 0.95 * sup
	}
	lo, hi := 0.0, aMax
	for range 30 {
		m := (lo + hi) / 2
		fitC(m)
		if share() < target {
			lo = m
		} else {
			hi = m
		}
	}
	a := (lo + hi) / 2
	fitC(a)
	sh := share()
	if m == n {
		return p, a, sh
	}
	// The constant c that gives the mean over the subsample, applied to every rank.
	lo, hi = 0, 1
	for fill(hi, a) < rho && hi < 1e12 {
		hi *= 4
	}
	for range 50 {
		c := (lo + hi) / 2
		if fill(c, a) < rho {
			lo = c
		} else {
			hi = c
		}
	}
	c := (lo + hi) / 2
	full := make([]float64, n)
	for r := range full {
		full[r] = min(0.99, c*math.Pow((float64(r)+0.5)/float64(n), -a))
	}
	return full, a, sh
}

// nblock is one sparse block (the QKV input or the MLP of one layer) and its neurons.
type nblock struct {
	id, layer, kind int
	n               int
	bytes           float64 // weight bytes of one neuron
	kind0           *nkind  // shared static data of the block's kind

	gap []float32 // thr − the batch's largest persistent part: active iff S > gap
	// rgap holds, with more than one request in the batch, each request's own gap
	// quantised (gapQ), slotW bytes a neuron, one per slot: a request fires the neuron when
	// S exceeds its gap.
	rgap   []uint8
	e      []float32 // token-level AR(1) state
	shape  *blockShape
	p1, p2 []uint16  // the two parents of each neuron in the previous block (shape's)
	clus   []uint8   // co-activation cluster (contiguous native ranges; shape's)
	kst    []float32 // cluster AR(1) states
	s1     []uint8   // predictor state (4 bits)
	loc    []uint8   // where it is computed: 0 = GPU copy, 1+j = home location j
	home   []uint8
	win    []uint8 // tokens active in the current window
	// gpuList holds the GPU-resident neurons (loc 0), in no particular order; collect
	// rebuilds it and promote keeps it current, so finding victims scans the GPU set only.
	gpuList []uint16
	hot0    []uint64 // bitset: in the offline GPU set
	slot    int      // GPU-resident neurons (fixed per block)
	sinc    int      // tokens since the last remap
	aS      float32  // parent coefficient of the shared part (calibrated, √(κ/2) without drift)
	aP      float32  // parent coefficient of the persistent part

	// Results of the last pass.
	comp []int32 // neurons computed (predicted active) per location
	// work is, per location, the neuron-requests computed: each computed neuron once for
	// every request that fired it, and once if none did (a false positive). With one
	// request it is comp.
	work              []int32
	act, pred, fp, fn int32
	actGPU            int32
	bins              []NeuronBin
	binLoc            []uint16 // neurons per bin and location, bins × locs (placement at the pass)
	promoted          []uint16 // this token, until the pass counts them
	remapped          []uint16
	corrN, corrA      [3]int32 // neurons with 0/1/2 parents active, and of them active
}

// nkind is the static data shared by every block of one kind (same size and rate).
type nkind struct {
	n       int
	p       []float64
	thr     []float32 // Φ⁻¹(1−p)
	alpha   float64
	share   float64
	binLo   []int32
	binP    []float32
	lptHome []uint8 // LPT home of rank r
}

// neuronSim holds every block and the trace generator.
type neuronSim struct {
	sp     Sparsity
	pol    HermesPolicy
	locs   int // 1 + home locations
	seed   uint64
	bins   int
	blocks []*nblock
	kinds  [2]*nkind

	// The latents and activations of the block before and the block being passed,
	// indexed by a uint16 parent without bounds checks.
	lat  [2]*latents
	maxN int // the larger block size

	members []int
	// perReq is whether the batch has more than one request, so the pass counts the
	// requests that fire each computed neuron; slotOf is the request of each of the slotW
	// slots of the blocks' rgap (−1: free).
	perReq bool
	slotW  int
	slotOf []int
	pPrev  [][]float32
	pCur   [][]float32
	fprod  []float32

	token int // tokens generated so far (the RNG counter)

	// tabPar and tabNoPar give, for index s1·8 + s2·2 + act, a neuron's activation (bit
	// 0), whether it was predicted active (bit 1) and its next state (bits 2–5), for
	// blocks with and without a previous block.
	tabPar   [128]uint8
	tabNoPar [128]uint8
	oracle   bool
	// windowed is whether the window-based remap can run (Algorithm 1 needs two or more
	// DIMMs), so the pass counts each neuron's activations in the window.
	windowed bool
	pw       *predWork
	// innov is normTab scaled by √(1−φ²): the token-level AR(1) innovations, one
	// multiplication a neuron fewer in the pass (the same float32 product either way).
	innov *[normSize]float32
	// A remap's buckets of cold neurons active in the window, DIMM·256 + A, kept with
	// their storage from one remap to the next, and a pair's buckets as it takes neurons
	// from them.
	buckets, bucketCur [][]uint16
	// A promotion's candidates and victims by state, and the chosen ones.
	byCand  [16][]uint16
	byState [16][]int32
	best    []uint16
	victims []int32

	// similarity of activated sets, sampled on one MLP block
	simBlock int
	ring     [26][]uint64
	ringN    [26]int
	ringLen  int
	ringHead int
	sim      [3]float64 // d = 1, 10, 25, averaged over the batch's tokens (−1 when not yet available)
	simSum   [3]float64
	simN     [3]int

	churn int // offline-hot neurons no longer on the GPU
	hotN  int

	part    passPart
	zeroPar []uint16
}

// latents are a block's latent variables for the current token and whether each neuron
// fired, in two arrays: the next block gathers from them twice a neuron, and at 5 bytes a
// neuron the two blocks a pass holds take 640 KiB rather than the 1 MiB of a float and a
// word side by side, the whole of many cores' L2, leaving room for the arrays the pass
// streams.
type latents struct {
	s   [1 << 16]float32
	act [1 << 16]uint8
}

// neuronCosts are the per-neuron expected times the offline mapper balances (Eq. 1–5).
type neuronCosts struct {
	gpu, dimm [2]float64 // seconds per activated neuron, per kind, on the GPU and on one home location
	sync      float64    // 2·T_sync seconds per block that uses the GPU
	budget    float64    // GPU bytes for hot neurons
	homes     int        // home locations (DIMMs, or 1 for the host)
}

func newNeuronSim(sp Sparsity, pol HermesPolicy, seed uint64, layers int, n [2]int, bytes [2]float64, homes int, cost neuronCosts) (*neuronSim, error) {
	if homes < 1 || homes > 254 {
		return nil, fmt.Errorf("the neuron map supports 1 to 254 home locations, got %d", homes)
	}
	for k := range n {
		if n[k] < 1 || n[k] > math.MaxUint16 {
			return nil, fmt.Errorf("a sparse block of %d neurons is outside the 1–65535 the neuron map tracks", n[k])
		}
	}
	ns := &neuronSim{sp: sp, pol: pol, locs: 1 + homes, seed: seed, bins: max(1, sp.Bins)}
	ns.oracle = pol.Predictor == PredictOracle
	ns.windowed = pol.Remap && pol.Window > 0 && homes > 1
	for st := range 16 {
		for s2 := range 3 {
			v := st + pol.Lambda*s2
			withPar := b2u(v > pol.Threshold || (pol.Compare == ">=" && v == pol.Threshold))
			// Block 0 has no previous block: a neuron is predicted from its state alone (s1 > T_h).
			noPar := b2u(st > pol.HotThreshold)
			for act := range uint8(2) {
				// The +4/−1 update from the token's actual activation, saturating at [0, 15].
				next := max(0, st-pol.StateDec)
				if act == 1 {
					next = min(15, st+pol.StateInc)
				}
				k := st*8 + s2*2 + int(act)
				pp, pn := withPar, noPar
				if ns.oracle {
					pp, pn = act, act
				}
				ns.tabPar[k] = act | pp<<1 | uint8(next)<<2
				ns.tabNoPar[k] = act | pn<<1 | uint8(next)<<2
			}
		}
	}
	rate := [2]float64{sp.QKVActive, sp.MLPActive}
	for k := range 2 {
		key := kindKey{n[k], rate[k], sp.HotFrac, sp.HotShare, ns.bins, homes}
		ns.kinds[k] = sharedKinds.get(key, func() *nkind { return newKind(n[k], rate[k], sp, ns.bins, homes) })
	}
	maxN := max(n[0], n[1])
	ns.maxN = maxN
	ns.zeroPar = make([]uint16, maxN)
	ns.pw = &predWork{}
	ns.innov = new([normSize]float32)
	sphi := float32(math.Sqrt(1 - sp.Phi*sp.Phi))
	for k, z := range normTab {
		ns.innov[k] = sphi * z
	}
	for i := range 2 {
		ns.lat[i] = new(latents)
	}
	ns.blocks = make([]*nblock, 2*layers)
	for b := range ns.blocks {
		ns.blocks[b] = ns.newBlock(b, b/2, b%2, bytes[b%2])
	}
	ns.simBlock = 2*(layers/2) + kindMLP
	for i := range ns.ring {
		ns.ring[i] = make([]uint64, (n[kindMLP]+63)/64)
	}
	ns.sim = [3]float64{-1, -1, -1}
	ck := calibKey{seed, layers, n[kindQKV], n[kindMLP], max(1, min(sp.Clusters, 255)), sp.Kappa, sp.Beta, sp.Gamma}
	cal := sharedCalibrations.get(ck, ns.calibrate)
	for i, b := range ns.blocks {
		b.aS, b.aP = cal.aS[i], cal.aP[i]
	}
	ns.mapOffline(cost)
	for _, b := range ns.blocks {
		b.collect()
	}
	return ns, nil
}

func newKind(n int, rho float64, sp Sparsity, bins, homes int) *nkind {
	k := &nkind{n: n}
	// The fit is the same for every number of bins and home locations: the Hermes engine
	// and its one-location baselines share it.
	fit := sharedFits.get(fitKey{n, rho, sp.HotFrac, sp.HotShare}, func() *powerFit {
		p, a, sh := powerLaw(n, rho, sp.HotFrac, sp.HotShare)
		return &powerFit{p, a, sh}
	})
	k.p, k.alpha, k.share = fit.p, fit.alpha, fit.share
	k.thr = make([]float32, n)
	for i, v := range k.p {
		k.thr[i] = float32(math.Sqrt2 * math.Erfinv(1-2*v)) // Φ⁻¹(1−p)
	}
	bins = min(bins, n)
	k.binLo = make([]int32, bins+1)
	for i := range k.binLo {
		k.binLo[i] = int32(i * n / bins)
	}
	k.binP = make([]float32, bins)
	for i := range bins {
		s := 0.0
		for r := k.binLo[i]; r < k.binLo[i+1]; r++ {
			s += k.p[r]
		}
		k.binP[i] = float32(s / float64(k.binLo[i+1]-k.binLo[i]))
	}
	// LPT over every neuron in descending frequency: each to the location with the least
	// activation mass so far (Graham's makespan greedy, within 4/3 of optimal).
	k.lptHome = make([]uint8, n)
	loads := make([]float64, homes)
	for r, v := range k.p {
		j := 0
		for h := 1; h < homes; h++ {
			if loads[h] < loads[j] {
				j = h
			}
		}
		k.lptHome[r] = uint8(j)
		loads[j] += v
	}
	return k
}

func b2u(b bool) uint8 {
	var x uint8
	if b {
		x = 1
	}
	return x
}

// calibrate scales each block's parent term so the latent variables keep their variance
// however deep the block: two parents drawn at random from the previous block share
// ancestors after a few layers, so their sum's variance exceeds twice a parent's and the
// activity would drift with depth. Over calibM independent draws of the whole chain it
// measures E[(x_π1 + x_π2)²] per block and sets the parent coefficient to
// √(κ·v / E[(x_π1 + x_π2)²]), v the part's variance (1−β shared, β persistent), which is
// √(κ/2) when the parents are independent. It gives each block's coefficients of the
// shared and the persistent part.
func (ns *neuronSim) calibrate() *calibration {
	const calibM = 4
	sp := ns.sp
	cal := &calibration{aS: make([]float32, len(ns.blocks)), aP: make([]float32, len(ns.blocks))}
	bb := math.Sqrt(1 - sp.Kappa)
	maxN := ns.maxN
	for part := range 2 {
		v := 1 - sp.Beta
		if part == 1 {
			v = sp.Beta
		}
		// The draws' latents, and each neuron's sum of its two parents' in the block
		// before, gathered once for the variance and the next latent alike.
		var prev, cur, par [calibM][]float32
		for m := range calibM {
			prev[m], cur[m], par[m] = make([]float32, maxN), make([]float32, maxN), make([]float32, maxN)
		}
		g := wyrng{s: hash3(ns.seed, 0x63616c6962, uint64(part))}
		for _, b := range ns.blocks {
			coef := 0.0
			own := 1.0
			if b.id > 0 {
				own = bb
				var q2 float64
				for m := range calibM {
					pm, sum := prev[m], par[m][:b.n]
					p2 := b.p2[:len(sum)]
					for i, p1 := range b.p1[:len(sum)] {
						sum[i] = pm[p1] + pm[p2[i]]
						q := float64(sum[i])
						q2 += q * q
					}
				}
				q2 /= float64(calibM * b.n)
				if q2 > 0 {
					coef = math.Sqrt(sp.Kappa * v / q2)
				}
			}
			var kst [256]float32
			for m := range calibM {
				for k := range b.kst {
					kst[k] = g.normal()
				}
				cg := float32(own * math.Sqrt(sp.Gamma))
				ce := float32(own * math.Sqrt(max(0, 1-sp.Beta-sp.Gamma)))
				cp := float32(own * math.Sqrt(sp.Beta))
				cm, sum := cur[m][:b.n], par[m][:b.n]
				clus := b.clus[:len(cm)]
				for i := range cm {
					x := float32(0)
					if b.id > 0 {
						x = float32(coef) * sum[i]
					}
					if part == 0 {
						x += cg*kst[clus[i]] + ce*g.normal()
					} else {
						x += cp * g.normal()
					}
					cm[i] = x
				}
			}
			if part == 0 {
				cal.aS[b.id] = float32(coef)
			} else {
				cal.aP[b.id] = float32(coef)
			}
			prev, cur = cur, prev
		}
	}
	return cal
}

// calibration is calibrate's result, the same for every engine of one model, seed and
// variance split (calibKey).
type calibration struct{ aS, aP []float32 }

type calibKey struct {
	seed                   uint64
	layers, nQKV, nMLP, ks int
	kappa, beta, gamma     float64
}

// nativeOrder is block id's seeded permutation from rank to native index.
func nativeOrder(seed uint64, id, n int) []int32 { return shuffled(seed, 0x6e6174697665, id, n) }

// shuffled is a seeded permutation of 0…n-1 for block id, one per salt.
func shuffled(seed, salt uint64, id, n int) []int32 {
	g := wyrng{s: hash3(seed, salt, uint64(id))}
	native := make([]int32, n)
	for i := range native {
		native[i] = int32(i)
	}
	for i := n - 1; i > 0; i-- {
		j := int(g.u64() % uint64(i+1))
		native[i], native[j] = native[j], native[i]
	}
	return native
}

// blockShape is what of a block never changes once built: each neuron's co-activation
// cluster and its two parents in the previous block. It depends only on the seed, the
// block and the sizes, so the engines of one model share it (sharedShapes), as they share
// their kinds (sharedKinds).
type blockShape struct {
	clus   []uint8
	p1, p2 []uint16
}

type shapeKey struct {
	seed               uint64
	id, n, parents, ks int
}

// powerFit is powerLaw's result for one fitKey.
type powerFit struct {
	p            []float64
	alpha, share float64
}

type fitKey struct {
	n                       int
	rate, hotFrac, hotShare float64
}

type kindKey struct {
	n                       int
	rate, hotFrac, hotShare float64
	bins, homes             int
}

// Kinds, their power-law fits and calibrations are small beside the time they take to
// make (a fit and a 70B model's calibration take tens of milliseconds each), so the sets
// hold the recent ones for the engines that follow: at most 24 kinds of 5 bytes a neuron
// and 24 fits of 8 (850 kB in all at 65,535 neurons), and 64 calibrations of 8 bytes a
// block.
var (
	sharedShapes       sharedSet[shapeKey, blockShape]
	sharedKinds        = sharedSet[kindKey, nkind]{keep: 24}
	sharedFits         = sharedSet[fitKey, powerFit]{keep: 24}
	sharedCalibrations = sharedSet[calibKey, calibration]{keep: 64}
)

func (ns *neuronSim) newBlock(id, layer, kind int, bytes float64) *nblock {
	kd := ns.kinds[kind]
	n := kd.n
	b := &nblock{id: id, layer: layer, kind: kind, n: n, bytes: bytes, kind0: kd,
		gap: slices.Clone(kd.thr), e: make([]float32, n),
		s1: make([]uint8, n), loc: make([]uint8, n), home: make([]uint8, n), win: make([]uint8, n),
		hot0: make([]uint64, (n+63)/64), comp: make([]int32, ns.locs), work: make([]int32, ns.locs), bins: make([]NeuronBin, len(kd.binP)),
		binLoc: make([]uint16, len(kd.binP)*ns.locs)}
	K := max(1, min(ns.sp.Clusters, 255))
	b.kst = make([]float32, K)
	g := wyrng{s: hash3(ns.seed, 0x626c6f636b, uint64(id))}
	for r := range n {
		b.e[r] = g.normal()
	}
	for k := range b.kst {
		b.kst[k] = g.normal()
	}
	pn := 0
	if id > 0 {
		pn = ns.kinds[(id-1)%2].n
	}
	var native []int32
	nativeOf := func() []int32 {
		if native == nil {
			native = nativeOrder(ns.seed, id, n)
		}
		return native
	}
	pg := g
	b.shape = sharedShapes.get(shapeKey{ns.seed, id, n, pn, K}, func() *blockShape {
		sh := &blockShape{clus: make([]uint8, n)}
		for r, v := range nativeOf() {
			sh.clus[r] = uint8(int(v) * K / n)
		}
		if pn > 0 {
			sh.p1, sh.p2 = make([]uint16, n), make([]uint16, n)
			for i := range n {
				sh.p1[i] = uint16(pg.u64() % uint64(pn))
				sh.p2[i] = uint16(pg.u64() % uint64(pn))
			}
		}
		return sh
	})
	b.clus, b.p1, b.p2 = b.shape.clus, b.shape.p1, b.shape.p2
	if pn > 0 {
		g.skip(2 * n)
	}
	homes := ns.locs - 1
	switch ns.pol.Layout {
	case LayoutChunked:
		for r, v := range nativeOf() {
			b.home[r] = uint8(int(v) * homes / n)
		}
	case LayoutRandom:
		for r := range n {
			b.home[r] = uint8(g.u64() % uint64(homes))
		}
	default:
		copy(b.home, kd.lptHome)
	}
	for r := range n {
		b.loc[r] = 1 + b.home[r]
	}
	return b
}

// mapperFraction is the offloading baselines' resident set: a fixed fraction of every
// block by native index, unrelated to how often a neuron fires.
const mapperFraction = "fraction"

// mapOffline chooses the GPU-resident neurons: the ILP-equivalent greedy (hottest first
// within a block, GPU bytes water-filled over blocks where the expected layer time
// max(T_GPU, T_DIMM) drops most per byte), a random set of the same byte budget, or (for
// the offloading baselines) a fixed fraction by native index.
func (ns *neuronSim) mapOffline(c neuronCosts) {
	var total float64
	for _, b := range ns.blocks {
		total += float64(b.n) * b.bytes
	}
	frac := min(1, c.budget/total)
	switch ns.pol.Mapper {
	case MapperRandom:
		// Exactly the budget's share of each block, so the random set never holds more
		// GPU memory than the budget (a coin per neuron overshot it by chance).
		for _, b := range ns.blocks {
			k := int32(frac * float64(b.n))
			for r, v := range shuffled(ns.seed, 0x72616e646f6d, b.id, b.n) {
				if v < k {
					b.setGPU(r)
				}
			}
		}
	case mapperFraction:
		for _, b := range ns.blocks {
			k := int32(frac * float64(b.n))
			for r, v := range nativeOrder(ns.seed, b.id, b.n) {
				if v < k {
					b.setGPU(r)
				}
			}
		}
	default:
		k := waterFill(ns.blocks, c)
		if ns.pol.Mapper == MapperCapacity {
			k = capacityFill(ns.blocks, c.budget)
		}
		for bi, b := range ns.blocks {
			for r := range k[bi] {
				b.setGPU(r)
			}
		}
	}
	for _, b := range ns.blocks {
		ns.hotN += b.slot
	}
}

func (b *nblock) setGPU(r int) {
	b.loc[r] = 0
	b.hot0[r/64] |= 1 << (r % 64)
	b.slot++
}

func (b *nblock) isHot0(r int) bool { return b.hot0[r/64]&(1<<(r%64)) != 0 }

// fillItem is one block in the water-filling heap.
type fillItem struct {
	b     int
	gain  float64 // τ decrease per byte of the next chunk
	chunk int
}

type fillHeap []fillItem

func (h fillHeap) Len() int { return len(h) }
func (h fillHeap) Less(i, j int) bool {
	if h[i].gain != h[j].gain {
		return h[i].gain > h[j].gain
	}
	return h[i].b < h[j].b
}
func (h fillHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *fillHeap) Push(x any)   { *h = append(*h, x.(fillItem)) }
func (h *fillHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// waterFill is the greedy for Eq. 1–7: within a block the hottest neurons are always the
// best GPU choices (same size and cost), so a block's GPU set is a prefix in rank order;
// the GPU budget goes, a chunk at a time, to the block whose expected time
// τ(k) = max(T_GPU·Σ_{r<k} f_r + 2·T_sync, T_DIMM·Σ_{r≥k} f_r / J) drops most per byte,
// until the budget is spent or no block improves. It returns k per block. f_r is the
// neuron's profiled activation frequency per token (§IV-B profiles single sequences of C4
// and Pile), so the mapping is the same whatever the batch it later serves.
func waterFill(blocks []*nblock, c neuronCosts) []int {
	k := make([]int, len(blocks))
	var prefix [2][]float64
	for kd := range 2 {
		for _, b := range blocks {
			if b.kind == kd {
				p := b.kind0.p
				pre := make([]float64, len(p)+1)
				for i, v := range p {
					pre[i+1] = pre[i] + v
				}
				prefix[kd] = pre
				break
			}
		}
	}
	tau := func(b *nblock, kk int) float64 {
		pre := prefix[b.kind]
		g := 0.0
		if kk > 0 {
			g = c.gpu[b.kind]*pre[kk] + c.sync
		}
		d := c.dimm[b.kind] * (pre[b.n] - pre[kk]) / float64(max(1, c.homes))
		return max(g, d)
	}
	item := func(bi int) (fillItem, bool) {
		b := blocks[bi]
		if k[bi] >= b.n {
			return fillItem{}, false
		}
		ch := min(max(1, b.n/512), b.n-k[bi])
		d := tau(b, k[bi]) - tau(b, k[bi]+ch)
		if d <= 0 && k[bi] == 0 {
			// The first chunk pays the syncs; look further before giving up on a block
			// the GPU has not touched yet.
			for ch2 := ch * 2; ch2 <= b.n; ch2 *= 2 {
				if d2 := tau(b, 0) - tau(b, ch2); d2 > 0 {
					return fillItem{b: bi, gain: d2 / (float64(ch2) * b.bytes), chunk: ch2}, true
				}
			}
		}
		if d <= 0 {
			return fillItem{}, false
		}
		return fillItem{b: bi, gain: d / (float64(ch) * b.bytes), chunk: ch}, true
	}
	h := &fillHeap{}
	for bi := range blocks {
		if it, ok := item(bi); ok {
			*h = append(*h, it)
		}
	}
	heap.Init(h)
	left := c.budget
	for h.Len() > 0 {
		it := heap.Pop(h).(fillItem)
		b := blocks[it.b]
		ch := it.chunk
		if need := float64(ch) * b.bytes; need > left {
			ch = int(left / b.bytes)
			if ch <= 0 {
				continue
			}
		}
		k[it.b] += ch
		left -= float64(ch) * b.bytes
		if nx, ok := item(it.b); ok {
			heap.Push(h, nx)
		}
	}
	return k
}

// capacityFill is PowerInfer's offline placement (powerinfer-py/powerinfer/solver.py: the
// ILP maximises the activations of the neurons on the GPU within its memory): whatever
// the time of the units that compute the rest, the GPU takes the most frequently
// activated neurons until its budget is spent. A block's set is a prefix in rank order,
// and of two sizes of neuron the more frequent goes first (it takes the more work off the
// host per byte of GPU memory); the last rank that does not fit every block of its kind
// goes to the first blocks it fits. It returns k per block.
func capacityFill(blocks []*nblock, budget float64) []int {
	var of [2][]int
	for bi, b := range blocks {
		of[b.kind] = append(of[b.kind], bi)
	}
	var r [2]int
	var extra []int
	left := budget
	for {
		kd := -1
		for x := range 2 {
			if len(of[x]) == 0 || r[x] >= blocks[of[x][0]].n {
				continue
			}
			if kd < 0 || blocks[of[x][0]].kind0.p[r[x]] > blocks[of[kd][0]].kind0.p[r[kd]] {
				kd = x
			}
		}
		if kd < 0 {
			break
		}
		by := blocks[of[kd][0]].bytes
		need := float64(len(of[kd])) * by
		if need > left {
			extra = of[kd][:int(left/by)]
			break
		}
		left -= need
		r[kd]++
	}
	k := make([]int, len(blocks))
	for bi, b := range blocks {
		k[bi] = r[b.kind]
	}
	for _, bi := range extra {
		k[bi]++
	}
	return k
}

// setBatch makes the trace follow the running requests. Each request has its own
// persistent context part (drawn per request); a neuron fires for the batch when it fires
// for any request, so only the batch's largest persistent part matters per neuron. A
// request leaving recomputes it; requests joining raise it. The prefill of the joining
// requests initialises the predictor states from their activation frequencies over the
// prompt (16 stages, §IV-C): states are reset when the whole batch is new and raised
// otherwise.
func (ns *neuronSim) setBatch(ids []int, fresh []int, promptLen float64) {
	left := false
	for _, m := range ns.members {
		if !slices.Contains(ids, m) {
			left = true
			break
		}
	}
	ns.members = append(ns.members[:0], ids...)
	// Each request's own gaps: written for every request when the batch first holds more
	// than one or outgrows the table.
	perReq := len(ids) > 1
	rebuild := perReq && (!ns.perReq || len(ids) > ns.slotW)
	ns.perReq = perReq
	if !left && len(fresh) == 0 && !rebuild {
		return
	}
	reset := len(fresh) == len(ids)
	calc := fresh
	if left || reset || rebuild {
		// Recompute the batch's largest persistent part from scratch.
		calc = ids
		inf := float32(math.Inf(1))
		for _, b := range ns.blocks {
			for i := range b.gap {
				b.gap[i] = inf
			}
		}
	}
	slots := ns.assignSlots(calc, perReq && len(calc) == len(ids))
	if reset {
		ns.ringLen, ns.ringHead = 0, 0
		ns.sim = [3]float64{-1, -1, -1}
		ns.simSum, ns.simN = [3]float64{}, [3]int{}
	}
	if len(calc) == 0 {
		return
	}
	for len(ns.pPrev) < len(calc) {
		ns.pPrev = append(ns.pPrev, make([]float32, ns.maxN))
		ns.pCur = append(ns.pCur, make([]float32, ns.maxN))
	}
	isFresh := make([]bool, len(calc))
	anyFresh := false
	for i, id := range calc {
		isFresh[i] = slices.Contains(fresh, id)
		anyFresh = anyFresh || isFresh[i]
	}
	sb := float32(math.Sqrt(ns.sp.Beta))
	sS := float32(math.Sqrt(max(1e-6, 1-ns.sp.Beta)))
	bb := float32(math.Sqrt(1 - ns.sp.Kappa))
	n := max(1.0, promptLen)
	if cap(ns.fprod) < ns.maxN {
		ns.fprod = make([]float32, ns.maxN)
	}
	// A prompt's count k of tokens is a whole number up to n, so the stages come from a
	// table over k (a prompt of up to 65,536 tokens), not a logarithm per neuron.
	var states []uint8
	if kMax := math.Round(n); anyFresh && kMax < 1<<16 {
		states = make([]uint8, int(kMax)+1)
		for k := range states {
			states[k] = initState(float64(k)/n, ns.pol.InitBins)
		}
	}
	for _, b := range ns.blocks {
		thr := b.kind0.thr
		fp := ns.fprod[:b.n]
		for i := range fp {
			fp[i] = 1
		}
		for ri, id := range calc {
			// The request's part, then the gap and the prefill's product over it, each
			// its own loop.
			pc, pp := ns.pCur[ri][:b.n], ns.pPrev[ri]
			hb := hash3(ns.seed^0x63747874, uint64(id), uint64(b.id))
			if b.id == 0 {
				for i := range pc {
					pc[i] = sb * hashNormal(splitmix(hb+uint64(i)))
				}
			} else {
				p2 := b.p2[:len(pc)]
				for i, p1 := range b.p1[:len(pc)] {
					c := sb * hashNormal(splitmix(hb+uint64(i)))
					pc[i] = b.aP*(pp[p1]+pp[p2[i]]) + bb*c
				}
			}
			gap, th := b.gap[:len(pc)], thr[:len(pc)]
			for i, v := range pc {
				if g := th[i] - v; g < gap[i] {
					gap[i] = g
				}
			}
			if slots != nil {
				W, sl := ns.slotW, slots[ri]
				rg := b.rgap[sl : sl+W*(len(pc)-1)+1]
				for i, v := range pc {
					rg[i*W] = gapQ(th[i] - v)
				}
			}
			if isFresh[ri] {
				fp := fp[:len(pc)]
				for i, v := range pc {
					fp[i] *= 1 - phiApprox((v-th[i])/sS)
				}
			}
			ns.pPrev[ri], ns.pCur[ri] = ns.pCur[ri], ns.pPrev[ri]
		}
		if anyFresh {
			// Prefill monitor: the frequency over the prompt, with the binomial noise of a
			// prompt of promptLen tokens, quantised into 16 stages.
			hn := hash3(ns.seed^0x7072656669, uint64(ns.token), uint64(b.id))
			for i := range b.n {
				f := float64(1 - fp[i])
				cnt := f*n + math.Sqrt(n*f*(1-f))*float64(hashNormal(splitmix(hn+uint64(i))))
				k := math.Round(min(n, max(0, cnt)))
				var st uint8
				if states != nil {
					st = states[int(k)]
				} else {
					st = initState(k/n, ns.pol.InitBins)
				}
				if reset || st > b.s1[i] {
					b.s1[i] = st
				}
			}
		}
		if reset {
			clear(b.win)
			b.sinc = 0
		}
		b.collect()
	}
}

// assignSlots gives each request of calc a slot of the per-request gap table and returns
// them (nil when the batch has one request). With all the batch's requests in calc the
// table is laid anew, as wide as the batch needs and every slot closed (gapQ's never);
// otherwise the newcomers take free slots, which the requests that left freed.
func (ns *neuronSim) assignSlots(calc []int, all bool) []int {
	if !ns.perReq {
		return nil
	}
	if all {
		if w := (len(calc) + 7) &^ 7; w > ns.slotW {
			ns.slotW = w
			for _, b := range ns.blocks {
				b.rgap = make([]uint8, b.n*w)
			}
		}
		for _, b := range ns.blocks {
			for i := range b.rgap {
				b.rgap[i] = gapNever
			}
		}
		ns.slotOf = ns.slotOf[:0]
		for range ns.slotW {
			ns.slotOf = append(ns.slotOf, -1)
		}
	}
	out := make([]int, len(calc))
	for ri, id := range calc {
		sl := slices.Index(ns.slotOf, -1)
		ns.slotOf[sl] = id
		out[ri] = sl
	}
	return out
}

// A request's gap thr − (its persistent part) is kept in 7 bits, 1/16 of the latent's
// standard deviation a step over [−4, 4): the shared part S of a token, rounded to the
// same steps, fires the request's neuron when its step is above the gap's (requestRun).
// Below −4 a gap always fires, at 4 and above never (S is a unit normal at most).
// gapNever closes a free slot.
const gapNever = 127

func gapQ(g float32) uint8 {
	x := (g + 4) * 16
	switch {
	case x <= 0:
		return 0
	case x >= gapNever:
		return gapNever
	}
	return uint8(x)
}

// initState quantises a prefill activation frequency into the 16 predictor stages: above
// 90% gives 15, below 2% gives 0 (§IV-C); in between, 14 bins uniform in log frequency
// (log) or in frequency (linear).
func initState(f float64, mode string) uint8 {
	switch {
	case f > 0.90:
		return 15
	case f < 0.02:
		return 0
	}
	var s int
	if mode == "linear" {
		s = 1 + int(14*(f-0.02)/(0.90-0.02))
	} else {
		s = 1 + int(14*math.Log(f/0.02)/math.Log(0.90/0.02))
	}
	return uint8(min(14, max(1, s)))
}

// collect rebuilds the GPU list from the placement, and the bins' placement.
func (b *nblock) collect() {
	b.gpuList = b.gpuList[:0]
	for i, l := range b.loc {
		if l == 0 {
			b.gpuList = append(b.gpuList, uint16(i))
		}
	}
	slices.Reverse(b.gpuList)
	// The bins' placement as it stands (a prefill-only step shows it; a decode pass
	// overwrites it with its token's figures).
	if len(b.binLoc) == 0 {
		return
	}
	locs := len(b.comp)
	clear(b.binLoc)
	bl := b.kind0.binLo
	for bi := range b.bins {
		lo, hi := int(bl[bi]), int(bl[bi+1])
		cnt := b.binLoc[bi*locs : (bi+1)*locs]
		for i := lo; i < hi; i++ {
			cnt[b.loc[i]]++
		}
		b.bins[bi] = NeuronBin{Neurons: uint16(hi - lo), GPU: cnt[0]}
	}
}

// passPart is one worker's share of a block pass: a contiguous range of bins.
type passPart struct {
	comp                  [256]int32
	more                  [256]int32 // requests beyond the first that fired a computed neuron
	act, pred, tp, gpuAct int32
}

// passConst are the per-token constants of a block pass.
type passConst struct {
	a, phi, be float32
	kc         [256]float32
	hasPar     bool
	perReq     bool // count the requests that fire each computed neuron
	prev, cur  *latents
	// A run's predictor inputs, s2·2 + act per neuron.
	q    [runLen]uint8
	seed uint64
}

// pass generates block b's activations for the current token, predicts, counts the
// neurons each location computes, and updates the predictor states and window counts.
// Bins draw from their own counter-based streams, so the order they run in does not
// change the result.
func (ns *neuronSim) pass(b *nblock) {
	sp := &ns.sp
	var c passConst
	c.hasPar = b.id > 0
	c.prev, c.cur = ns.lat[(b.id+1)&1], ns.lat[b.id&1]
	c.seed = hash3(ns.seed^0x746f6b656e, uint64(ns.token), uint64(b.id))
	g := wyrng{s: c.seed}
	phiK := float32(sp.PhiCluster)
	sK := float32(math.Sqrt(1 - sp.PhiCluster*sp.PhiCluster))
	for k := range b.kst {
		b.kst[k] = phiK*b.kst[k] + sK*g.normal()
	}
	bb := float32(math.Sqrt(1 - sp.Kappa))
	c.a = b.aS
	if !c.hasPar {
		c.a, bb = 0, 1
	}
	cg := bb * float32(math.Sqrt(sp.Gamma))
	for k, v := range b.kst {
		c.kc[k] = cg * v
	}
	c.phi = float32(sp.Phi)
	c.be = bb * float32(math.Sqrt(max(0, 1-sp.Beta-sp.Gamma)))
	tab := &ns.tabNoPar
	if c.hasPar {
		tab = &ns.tabPar
	}
	for k, v := range tab {
		ns.pw.next[k], ns.pw.inc[k] = v>>2&15, 1<<(16*(v&3))
	}

	// One pass over every bin: on two cores, splitting the bins over goroutines made a
	// 70B step slower (60 ms against 40 ms).
	pt := &ns.part
	pt.comp = [256]int32{}
	c.perReq = ns.perReq
	if c.perReq {
		pt.more = [256]int32{}
	}
	pt.act, pt.pred, pt.tp, pt.gpuAct = 0, 0, 0, 0
	ns.passBins(b, &c, 0, len(b.bins), pt)
	copy(b.comp, pt.comp[:])
	copy(b.work, pt.comp[:])
	if c.perReq {
		for l := range b.work {
			b.work[l] += pt.more[l]
		}
	}
	act, pred, tp, gpuAct := pt.act, pt.pred, pt.tp, pt.gpuAct
	b.act, b.pred, b.fp, b.fn, b.actGPU = act, pred, pred-tp, act-tp, gpuAct
	for _, r := range b.promoted {
		b.bins[ns.binOf(b, int(r))].Promoted++
	}
	for _, r := range b.remapped {
		b.bins[ns.binOf(b, int(r))].Remapped++
	}
	b.promoted, b.remapped = b.promoted[:0], b.remapped[:0]
	b.sinc++
	if b.id == ns.simBlock {
		ns.similarity(c.cur.act[:b.n])
		ns.correlation(b, c.prev, c.cur)
	}
}

// passBins runs bins [from, to) of block b's pass into pt, a run of at most runLen
// neurons at a time: the trace (stepAR, traceRun), then the predictor (predictRun) and
// the window counts, each its own tight loop over the run's arrays (one loop for the
// trace and the predictor was slower: it holds more values than there are registers).
func (ns *neuronSim) passBins(b *nblock, c *passConst, from, to int, pt *passPart) {
	kd := b.kind0
	n := b.n
	p1, p2 := b.p1, b.p2
	if !c.hasPar {
		// Block 0 has no parents: point at a zero row so one loop serves every block.
		p1, p2 = ns.zeroPar[:n], ns.zeroPar[:n]
	}
	qb := &c.q
	var tAct, tPred, tTP, tGPUAct int32
	for bi := from; bi < to; bi++ {
		lo, hi := int(kd.binLo[bi]), int(kd.binLo[bi+1])
		g := wyrng{s: c.seed + uint64(bi)*0x9e3779b97f4a7c15}
		hc := &ns.pw.hc
		for c := range 4 {
			clear(hc[c<<8 : c<<8+ns.locs])
		}
		for j := lo; j < hi; j += runLen {
			m := min(runLen, hi-j)
			e := b.e[j : j+m]
			stepAR(&g, e, c.phi, ns.innov)
			traceRun(c, e, b.gap[j:j+m], b.clus[j:j+m], p1[j:j+m], p2[j:j+m], c.cur.s[j:j+m], c.cur.act[j:j+m])
			if c.perReq {
				W := ns.slotW
				requestRun(ns.pw, qb[:len(e)], b.s1[j:j+m], b.loc[j:j+m], c.cur.s[j:j+m], b.rgap[j*W:(j+m)*W], W, &pt.more)
			}
			predictRun(ns.pw, qb[:len(e)], b.s1[j:j+m], b.loc[j:j+m])
			if ns.windowed {
				countWindow(b.win[j:j+m], qb[:len(e)])
			}
		}
		// hc counts the neurons per location in four interleaved copies, each word four
		// 16-bit counts by pred·2 + act; no count exceeds the bin's neurons.
		lc := b.binLoc[bi*ns.locs : (bi+1)*ns.locs]
		var nAct, nPred, nTP int32
		for l := range lc {
			x := hc[l&255] + hc[256|l&255] + hc[512|l&255] + hc[768|l&255]
			h1, h2, h3 := int32(x>>16&0xffff), int32(x>>32&0xffff), int32(x>>48)
			lc[l] = uint16(x) + uint16(h1+h2+h3)
			pt.comp[l] += h2 + h3
			nPred += h2 + h3
			nAct += h1 + h3
			nTP += h3
			if l == 0 {
				tGPUAct += h1 + h3
			}
		}
		b.bins[bi] = NeuronBin{Neurons: uint16(hi - lo), GPU: lc[0], Active: uint16(nAct), Predicted: uint16(nPred),
			FP: uint16(nPred - nTP), FN: uint16(nAct - nTP)}
		tAct += nAct
		tPred += nPred
		tTP += nTP
	}
	pt.act, pt.pred, pt.tp, pt.gpuAct = tAct, tPred, tTP, tGPUAct
}

// stepAR moves a run of neurons' token-level AR(1) states on by a fresh normal each,
// e ← φ·e + √(1−φ²)·z, five normals to a draw of g, the innovation √(1−φ²)·z read from
// innov. It is the trace's first step, apart from traceRun so that loop holds fewer
// values, and the normals need no buffer.
func stepAR(g *wyrng, e []float32, phi float32, innov *[normSize]float32) {
	s := g.s // in a register, not written back each draw
	var r uint64
	for ; len(e) >= 5; e = e[5:] {
		s, r = wyrand(s)
		e5 := e[:5:5]
		e5[0] = phi*e5[0] + innov[r&(normSize-1)]
		e5[1] = phi*e5[1] + innov[(r>>12)&(normSize-1)]
		e5[2] = phi*e5[2] + innov[(r>>24)&(normSize-1)]
		e5[3] = phi*e5[3] + innov[(r>>36)&(normSize-1)]
		e5[4] = phi*e5[4] + innov[(r>>48)&(normSize-1)]
	}
	if len(e) > 0 {
		s, r = wyrand(s)
		for k := range e {
			e[k] = phi*e[k] + innov[r&(normSize-1)]
			r >>= normBits
		}
	}
	g.s = s
}

// traceRun draws the activations of a run of neurons for the current token (the
// synthetic trace behind §III's token-wise similarity and layer-wise correlation), their
// token-level AR(1) states e moved on (stepAR): each neuron's latent adds to its state its
// cluster's state and the latents of its two parents, and it fires when the latent
// exceeds its gap. c.q gets the predictor's input, (parents active)·2 + active.
func traceRun(c *passConst, e, gap []float32, clus []uint8, par1, par2 []uint16, curS []float32, curA []uint8) {
	a, be := c.a, c.be
	ps, pa := &c.prev.s, &c.prev.act
	m := min(len(e), runLen)
	e, gap, clus, par1, par2, curS, curA = e[:m], gap[:m], clus[:m], par1[:m], par2[:m], curS[:m], curA[:m]
	for k := range m {
		ei := e[k]
		p1, p2 := par1[k], par2[k]
		s := be*ei + c.kc[clus[k]] + a*(ps[p1]+ps[p2])
		act := b2u(s > gap[k])
		curS[k], curA[k] = s, act
		c.q[k] = (pa[p1]+pa[p2])*2 + act
	}
}

// predWork is the predictor's tables and outputs, behind one pointer so its loop keeps
// its values in registers. The block's step table (tabPar or tabNoPar) is split in two,
// each read directly by s1·8 + s2·2 + act: unpacking one byte took more instructions
// than the second load.
type predWork struct {
	next [128]uint8   // the next state
	inc  [128]uint64  // 1 in the 16-bit lane of the count, pred·2 + act
	hc   [1024]uint64 // a bin's neurons per copy·256 + location, by prediction and activation
}

// predictRun runs the lightweight predictor (§IV-C) over a run of neurons: the prediction
// from the state and the parents (s1 + λ·s2 against T), the +4/−1 state update from the
// actual activation, and the count per location, prediction and activation into w.hc.
// The neurons it turns hot are not listed here: the promotion finds the few it needs in
// the states (candidates).
func predictRun(w *predWork, q, s1, loc []uint8) {
	s1, loc = s1[:len(q)], loc[:len(q)]
	next, inc, hc := &w.next, &w.inc, &w.hc
	// Four neurons at a time, one to each of four interleaved copies of the counts, so
	// neighbours at one location do not wait on each other and the copy needs no
	// arithmetic.
	k := 0
	for ; k+4 <= len(q); k += 4 {
		q4, s4, l4 := q[k:k+4:k+4], s1[k:k+4:k+4], loc[k:k+4:k+4]
		i0 := (int(s4[0])<<3 | int(q4[0])) & 127
		i1 := (int(s4[1])<<3 | int(q4[1])) & 127
		i2 := (int(s4[2])<<3 | int(q4[2])) & 127
		i3 := (int(s4[3])<<3 | int(q4[3])) & 127
		s4[0], s4[1], s4[2], s4[3] = next[i0], next[i1], next[i2], next[i3]
		hc[int(l4[0])] += inc[i0]
		hc[256+int(l4[1])] += inc[i1]
		hc[512+int(l4[2])] += inc[i2]
		hc[768+int(l4[3])] += inc[i3]
	}
	for ; k < len(q); k++ {
		i := (int(s1[k])<<3 | int(q[k])) & 127
		s1[k] = next[i]
		hc[int(loc[k])] += inc[i]
	}
}

const (
	lo8 = 0x0101010101010101
	lo7 = 0x7f7f7f7f7f7f7f7f
	hi8 = lo8 << 7
)

// requestRun counts, for a run of neurons the predictor sends to be computed (its state
// s1 before the update, q = parents·2 + active) and that fired, the requests beyond the
// first that fired each, by its location into more: a unit reads a row once for the
// batch but multiplies it once for every request whose own input needs it (§V-B2; so does
// PowerInfer's CPU kernel, ggml.c ggml_compute_forward_mul_mat_sparse, which skips a row
// for each token its predictor marks inactive). A request fires the neuron when its gap
// (rg, W slots a neuron, gapQ) is below the shared latent s rounded to the same steps:
// adding 128 + x − 1 − y to a gap byte y ≤ 127 sets its bit 7 exactly when y < x, with no
// borrow between bytes, and the flags of up to 16 words (128 requests) add up bytewise
// before one multiplication sums a word's bytes.
func requestRun(w *predWork, q, s1, loc []uint8, s []float32, rg []uint8, W int, more *[256]int32) {
	n := len(q)
	s1, loc, s, rg = s1[:n], loc[:n], s[:n], rg[:n*W]
	for k, v := range q {
		// lane 3 of the count, predicted and active
		if v&1 == 0 || w.inc[(int(s1[k])<<3|int(v))&127] != 1<<48 {
			continue
		}
		x := int((s[k]+4)*16 + 0.5)
		if x < 2 {
			continue // at most one request
		}
		m := uint64(min(x, gapNever)-1)*lo8 | hi8
		var c int
		switch off := k * W; W {
		case 8: // batches of up to 8 and 16, the paper's, read their words directly
			c = int((m - binary.LittleEndian.Uint64(rg[off:])) & hi8 >> 7 * lo8 >> 56)
		case 16:
			t := (m-binary.LittleEndian.Uint64(rg[off:]))&hi8>>7 + (m-binary.LittleEndian.Uint64(rg[off+8:]))&hi8>>7
			c = int(t * lo8 >> 56)
		default:
			for row := rg[off : off+W]; len(row) > 0; {
				ch := row[:min(len(row), 128)]
				row = row[len(ch):]
				var t uint64
				for ; len(ch) >= 8; ch = ch[8:] {
					t += (m - binary.LittleEndian.Uint64(ch)) & hi8 >> 7
				}
				c += int(t * lo8 >> 56)
			}
		}
		if c > 1 {
			more[loc[k]] += int32(c - 1)
		}
	}
}

// countWindow adds each neuron's activation (bit 0 of its predictor input q) to its count
// for the window, Algorithm 1's A_i (§IV-E), eight neurons at a time, saturating at 255.
func countWindow(win, q []uint8) {
	q = q[:len(win)]
	k := 0
	for ; k+8 <= len(win); k += 8 {
		w8, q8 := win[k:k+8:k+8], q[k:k+8:k+8]
		w := binary.LittleEndian.Uint64(w8)
		// Bit 7 of each byte of ^w that is not 0, so of w not 255 (no carries between
		// bytes), moved to bit 0: the counts that may grow.
		x := ^w
		open := ((x&lo7 + lo7) | x) >> 7
		binary.LittleEndian.PutUint64(w8, w+binary.LittleEndian.Uint64(q8)&lo8&open)
	}
	for ; k < len(win); k++ {
		win[k] += q[k] & 1 & b2u(win[k] < 255)
	}
}

// byteSum is the sum of the bytes of b (at most runLen of them, each at most 15).
func byteSum(b []uint8) int32 {
	const lo16 = 0x00ff00ff00ff00ff
	var acc uint64 // four 16-bit lanes, each growing by at most 30 a word
	k := 0
	for ; k+8 <= len(b); k += 8 {
		w := binary.LittleEndian.Uint64(b[k:])
		acc += w&lo16 + (w>>8)&lo16
	}
	s := int32(acc&0xffff + (acc>>16)&0xffff + (acc>>32)&0xffff + acc>>48)
	for ; k < len(b); k++ {
		s += int32(b[k])
	}
	return s
}

// binState is the mean predictor state of block b's neurons lo…hi−1 (a bin), which only a
// token's pass and the prefill change: the neuron view reads it, so it is summed when a
// snapshot asks rather than by every pass.
func (b *nblock) binState(lo, hi int) float32 {
	var sum int32
	for j := lo; j < hi; j += runLen {
		sum += byteSum(b.s1[j:min(hi, j+runLen)])
	}
	return float32(sum) / float32(max(1, hi-lo))
}

// correlation measures, on the sampled block, how often a neuron fires when both or one
// of its two correlated parents fired this token (the paper's layer-wise correlation).
func (ns *neuronSim) correlation(b *nblock, prev, cur *latents) {
	var n, a [3]int32
	if b.p1 != nil {
		for i, p1 := range b.p1 {
			s2 := prev.act[p1] + prev.act[b.p2[i]]
			n[s2]++
			a[s2] += int32(cur.act[i])
		}
	}
	b.corrN, b.corrA = n, a
}

func (ns *neuronSim) binOf(b *nblock, r int) int {
	bl := b.kind0.binLo
	i, _ := slices.BinarySearch(bl, int32(r)+1)
	return i - 1
}

// similarity records block simBlock's activated set and compares it with the sets 1, 10
// and 25 tokens earlier: |A_t ∩ A_{t−d}| / |A_t| (the paper's token-wise similarity).
func (ns *neuronSim) similarity(act []uint8) {
	slot := ns.ringHead
	bs := ns.ring[slot]
	clear(bs)
	cnt := 0
	for i, w := range act {
		if w != 0 {
			bs[i/64] |= 1 << (i % 64)
			cnt++
		}
	}
	ns.ringN[slot] = cnt
	ns.ringHead = (ns.ringHead + 1) % len(ns.ring)
	ns.ringLen = min(ns.ringLen+1, len(ns.ring))
	for k, d := range [3]int{1, 10, 25} {
		if ns.ringLen <= d || cnt == 0 {
			continue
		}
		old := ns.ring[(slot-d+len(ns.ring))%len(ns.ring)]
		inter := 0
		for w, x := range bs {
			inter += bits.OnesCount64(x & old[w])
		}
		ns.simSum[k] += float64(inter) / float64(cnt)
		ns.simN[k]++
		ns.sim[k] = ns.simSum[k] / float64(ns.simN[k])
	}
}

// promote is the online hot/cold adjustment of one block (§IV-D): off-GPU neurons whose
// state exceeds T_h are copied to the GPU, each overwriting the GPU-resident neuron of
// the block with the lowest state, as long as the newcomer's state is higher and the
// copy fits in budget bytes (queue mode; stall mode passes an unbounded budget); the rest
// stay candidates for a later window. It returns the neurons copied.
func (ns *neuronSim) promote(b *nblock, budget float64) int {
	if b.slot == 0 {
		return 0
	}
	// m, the neurons to copy, is every candidate if the budget holds them all, else as
	// many as it holds. The candidates are the off-GPU neurons whose state exceeds T_h,
	// read from the states here rather than listed by the pass, as a quarter of a
	// block's neurons can be candidates and a promotion needs only the best few: one scan
	// keeps the first k of each state (hotter rank first among equals) and ends once k of
	// the highest state are in, as no later candidate can displace them. With k two
	// above what the budget holds, a scan that ends early has met more candidates than
	// the budget holds, and m is what it holds.
	held := b.n
	if budget < float64(b.n)*b.bytes {
		held = max(0, int(budget/b.bytes))
	}
	byCand := &ns.byCand
	count, stopped := ns.candidates(b, held+2)
	m := held
	if !stopped {
		if count == 0 {
			return 0
		}
		m = count
		if budget < float64(m)*b.bytes {
			m = int(budget / b.bytes)
		}
	}
	if m <= 0 {
		return 0
	}
	best := ns.best[:0]
	for s := 15; s >= 0 && len(best) < m; s-- {
		best = append(best, byCand[s][:min(len(byCand[s]), m-len(best))]...)
	}
	// Victims: the m lowest-state GPU residents, in one scan of the GPU list keeping the
	// first m of each state; among equal states the one met first in the list (which
	// starts in descending rank order, colder first).
	byState := &ns.byState // positions in gpuList
	for s := range byState {
		byState[s] = byState[s][:0]
	}
	for pos, i := range b.gpuList {
		if s := b.s1[i]; len(byState[s]) < m {
			byState[s] = append(byState[s], int32(pos))
		}
	}
	victims := ns.victims[:0]
	for s := 0; s < 16 && len(victims) < m; s++ {
		victims = append(victims, byState[s][:min(len(byState[s]), m-len(victims))]...)
	}
	ns.best, ns.victims = best, victims
	n := 0
	for i, c := range best[:min(len(best), len(victims))] {
		pos := victims[i]
		v := int(b.gpuList[pos])
		if b.s1[c] <= b.s1[v] {
			break
		}
		b.loc[v] = 1 + b.home[v]
		b.loc[c] = 0
		b.gpuList[pos] = c
		if b.isHot0(int(v)) {
			ns.churn++
		}
		if b.isHot0(int(c)) {
			ns.churn--
		}
		b.promoted = append(b.promoted, c)
		n++
	}
	return n
}

// candidates files block b's off-GPU neurons whose state exceeds T_h into ns.byCand by
// state, in index order, at most k a state, and stops once k of state 15 are in. It
// returns the candidates met and whether it stopped there. It reads eight neurons a word:
// a state is at most 15, so adding 127 − T_h to each byte sets its bit 7 exactly when the
// state exceeds T_h, with no carry between bytes.
func (ns *neuronSim) candidates(b *nblock, k int) (int, bool) {
	byCand := &ns.byCand
	for s := range byCand {
		byCand[s] = byCand[s][:0]
	}
	th := ns.pol.HotThreshold
	if th >= 15 {
		return 0, false
	}
	add := uint64(127-max(th, -1)) * lo8
	s1, loc := b.s1, b.loc[:len(b.s1)]
	count := 0
	file := func(i int) bool {
		count++
		if s := s1[i]; len(byCand[s]) < k {
			byCand[s] = append(byCand[s], uint16(i))
			return len(byCand[15]) == k
		}
		return false
	}
	w := 0
	for ; w+8 <= len(s1); w += 8 {
		st := binary.LittleEndian.Uint64(s1[w:])
		l := binary.LittleEndian.Uint64(loc[w:])
		off := (l&lo7 + lo7) | l // bit 7 of each byte not 0
		for x := (st + add) & off & hi8; x != 0; x &= x - 1 {
			if file(w + bits.TrailingZeros64(x)>>3) {
				return count, true
			}
		}
	}
	for i := w; i < len(s1); i++ {
		if int(s1[i]) > th && loc[i] != 0 && file(i) {
			return count, true
		}
	}
	return count, false
}

// remapResult is what Algorithm 1 did to one block.
type remapResult struct {
	moved     int
	pairBytes []float64 // bytes each pair moved (pairs use disjoint DIMM-links)
	before    []int32   // Z per DIMM before and after
	after     []int32
}

// remap is the window-based scheduling of cold neurons (Algorithm 1, implementable form):
// with A_i the tokens of the window in which cold neuron i fired and Z_j = Σ_i C_ji·A_i,
// sort the DIMMs by Z, pair the heaviest with the lightest, the second with the second
// lightest, …, and within each pair move the most active neuron that still narrows the
// gap (0 < A_i < Z_hi − Z_lo) from the heavy DIMM to the light one, updating Z, until none
// does. The printed algorithm's partner index J−id (should be J−1−id), inverted loop
// test and stale Z are corrected. The window counts are cleared.
func (ns *neuronSim) remap(b *nblock) remapResult {
	J := ns.locs - 1
	res := remapResult{pairBytes: make([]float64, J/2), before: make([]int32, J), after: make([]int32, J)}
	defer func() {
		clear(b.win)
		b.sinc = 0
	}()
	if J < 2 {
		return res
	}
	// Z and the cold neurons active in the window, eight neurons a word: only the active
	// ones are visited, in index order. They go into buckets by DIMM and activity
	// (DIMM·256 + A) in the same scan: only the heavy DIMMs' buckets are used, but which
	// DIMMs are heavy is known only once Z is, and a second pass cost more.
	Z := make([]int32, J)
	maxA := 0
	if len(ns.buckets) < J*256 {
		ns.buckets = make([][]uint16, J*256)
	}
	buckets := ns.buckets[:J*256]
	for i := range buckets {
		buckets[i] = buckets[i][:0]
	}
	win, loc := b.win, b.loc[:len(b.win)]
	for k := 0; k < len(win); k += 8 {
		var w uint64
		if k+8 <= len(win) {
			w = binary.LittleEndian.Uint64(win[k:])
		} else {
			for i := len(win) - 1; i >= k; i-- {
				w = w<<8 | uint64(win[i])
			}
		}
		for nz := ((w&lo7 + lo7) | w) &^ lo7; nz != 0; nz &= nz - 1 { // bit 7 of each byte not 0
			i := k + bits.TrailingZeros64(nz)>>3
			if l := int(loc[i]); l != 0 {
				a := int(win[i])
				Z[l-1] += int32(a)
				maxA = max(maxA, a)
				buckets[(l-1)<<8|a] = append(buckets[(l-1)<<8|a], uint16(i))
			}
		}
	}
	copy(res.before, Z)
	ord := make([]int, J)
	for j := range ord {
		ord[j] = j
	}
	slices.SortStableFunc(ord, func(x, y int) int { return int(Z[y] - Z[x]) })
	for id := 0; id < J/2; id++ {
		hi, lo := ord[id], ord[J-1-id]
		bk := append(ns.bucketCur[:0], buckets[hi<<8:hi<<8+maxA+1]...)
		ns.bucketCur = bk
		for {
			gapZ := int(Z[hi] - Z[lo])
			h := -1
			for a := min(maxA, gapZ-1); a >= 1; a-- {
				if len(bk[a]) > 0 {
					h = a
					break
				}
			}
			if h < 0 {
				break
			}
			r := bk[h][0]
			bk[h] = bk[h][1:]
			b.home[r] = uint8(lo)
			b.loc[r] = uint8(1 + lo)
			Z[hi] -= int32(h)
			Z[lo] += int32(h)
			res.pairBytes[id] += b.bytes
			res.moved++
			b.remapped = append(b.remapped, r)
		}
	}
	copy(res.after, Z)
	return res
}

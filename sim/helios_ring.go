package sim

// Stratum's ring dataflow on the HB-Device, the HB-non-Tiled baseline's (HeLioS Sec. VI-A:
// it "adopts the execution flow of Stratum", which has as many PEs; "its ring topology is
// a subset of mesh", so its operator dataflow runs on the HB-Device). The PEs form one ring
// through every PE of the mesh (a Hamiltonian cycle, so each step of a ring collective is
// one hop), and each FC is split over all of them along one dimension instead of HeLioS'
// 2-D tiles: the first FC of a pair by its outputs (every PE holds the whole input and
// writes a slice), the second by its inputs (every PE holds a slice and writes partial
// sums of the whole output), so a pair ends with one ring all-reduce of the whole output
// and the next FC finds its input on every PE. Attention is non-tiled on each KV head's
// module: the QKV slices are all-gathered round the ring so every module has its heads'
// queries and new keys and values, and the modules' outputs are all-gathered so every PE
// holds its slice of the output projection's input. The norms run on the replicated
// vectors, with nothing to exchange. HeLioS's own collectives (Figs. 12-14) instead move
// a 1/m share of each vector along one mesh axis, m PEs at a time.
//
// Each ring collective is the ring bound of lineAllReduce and lineAllGather over the
// mesh's m² PEs: a line of them closed into a ring.

// fcTile is one PE's share of an FC of hin → hout split evenly over the PEs: weights
// hin·hout/PEs for each of mats matrices read (the touched experts of an MoE layer, or 1),
// over tokens rows, reading the fraction in of each input row and writing the fraction
// out of each output row.
func (s *hbSystem) fcTile(tokens, mats, hin, hout, in, out float64) (Time, float64, float64) {
	p := float64(s.sh.Precision)
	n := float64(s.pes)
	w := hin * hout / n * p
	flops := 2 * tokens * hin * hout / n
	bytes := mats*w + tokens*(hin*in+hout*out)*p
	return s.peTime(flops, bytes, s.hb.RowEff(w/float64(s.hb.BanksPerPE()))), flops, bytes
}

// ringPhases is one layer's phases under the ring dataflow (hbSystem.phases).
func (s *hbSystem) ringPhases(decode []*Request) []hbPhase {
	sh := s.sh
	B := len(decode)
	bf := float64(B)
	P := float64(sh.Precision)
	d := float64(sh.DModel)
	hd := float64(sh.HeadDim)
	q := float64(sh.HeadsDev())
	kvh := float64(sh.KVHeadsDev())
	n := s.pes
	slice := 1 / float64(n)
	seg := func(name string, t Time, fl, by float64) hbSeg {
		return hbSeg{name: name, dur: t, flops: fl, bytes: by}
	}
	col := func(name string, hin, hout float64) hbSeg { // split by outputs
		t, fl, by := s.fcTile(bf, 1, hin, hout, 1, slice)
		return seg(name, t, fl, by)
	}
	row := func(name string, hin, hout float64) hbSeg { // split by inputs
		t, fl, by := s.fcTile(bf, 1, hin, hout, slice, 1)
		return seg(name, t, fl, by)
	}
	gather := func(name string, bytes float64) hbSeg {
		return hbSeg{name: name, dur: lineAllGather(n, bytes, s.hop, s.link), comm: true}
	}
	reduce := func(name string, bytes float64) hbSeg {
		return hbSeg{name: name, dur: lineAllReduce(n, bytes, s.hop, s.link), comm: true}
	}
	var out []hbPhase
	phase := func(name string, segs ...hbSeg) { out = append(out, hbPhase{name: name, segs: segs}) }
	nvlink := func(name string) {
		if sh.TP > 1 {
			out = append(out, s.nvlinkPhase(name, B))
		}
	}

	phase("QKV FC·AG", col("QKV FC", d, (q+2*kvh)*hd), gather("QKV all-gather", bf*(q+2*kvh)*hd*P))
	s.attention(decode, nil)
	out = append(out, hbPhase{name: "attention", attn: true})
	phase("AG·O FC·AR", gather("O all-gather", bf*q*hd*P), row("O FC", q*hd, d), reduce("O all-reduce", bf*d*P))
	nvlink("TP all-reduce")
	mats := sh.ffnMatrices()
	if sh.Experts > 0 {
		w := moeWork(sh, s.cl.EP, B)
		f := float64(sh.DFFN)
		ex := func(name string, hin, hout, in, out float64) hbSeg {
			t, fl, by := s.fcTile(w.tokens, w.touched, hin, hout, in, out)
			return seg(name, t, fl, by)
		}
		phase("experts·AR", col("router FC", d, float64(sh.Experts)), ex("expert FC1", d, (mats-1)*f, 1, slice),
			ex("expert FC2", f, d, slice, 1), reduce("experts all-reduce", bf*d*P))
	} else {
		f := float64(sh.DFFN) / float64(sh.TP)
		phase("FFN·AR", col("FFN FC1", d, (mats-1)*f), row("FFN FC2", f, d), reduce("FFN all-reduce", bf*d*P))
	}
	nvlink("TP all-reduce")
	return out
}

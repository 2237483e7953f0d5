package sim

// DRAMTiming holds the DRAM timing parameters in memory-clock cycles. The analytical model
// folds command-level timing into the PIM tile latencies (as the NeuPIMs authors' scheduler
// does); tRP, tRCD and tWR also price a single-row-buffer bank's switch between memory and
// PIM rows (blocked mode), and the rest show the organisation the latencies stand for.
type DRAMTiming struct {
	RP, RCD, RAS, RRDL, WR, CCDS, CCDL, REFI, RFC, FAW int
}

// DRAM is the organisation of a DRAM or HBM device: channels of bank groups of banks, rows
// of one page each, and a data bus per channel.
type DRAM struct {
	Channels        int
	BankGroups      int // per channel
	BanksPerChannel int
	RowsPerBank     int
	PageBytes       int
	BusBits         int     // data bus width per channel
	ClockGHz        float64 // memory clock (tCK = 1/ClockGHz ns)
	TransfersPerClk int     // 2 for double data rate
	Timing          DRAMTiming
}

// ChannelBandwidth is the peak external bandwidth of one channel in bytes/s: bus width ×
// transfers per clock × clock.
func (d DRAM) ChannelBandwidth() float64 {
	return float64(d.BusBits) / 8 * float64(d.TransfersPerClk) * d.ClockGHz * 1e9
}

// Bandwidth is the peak external bandwidth of the whole device in bytes/s.
func (d DRAM) Bandwidth() float64 { return d.ChannelBandwidth() * float64(d.Channels) }

// ChannelCapacity is the bytes one channel holds: banks × rows × page.
func (d DRAM) ChannelCapacity() float64 {
	return float64(d.BanksPerChannel) * float64(d.RowsPerBank) * float64(d.PageBytes)
}

// Capacity is the bytes the whole device holds.
func (d DRAM) Capacity() float64 { return d.ChannelCapacity() * float64(d.Channels) }

// BanksPerGroup is the number of banks in one bank group.
func (d DRAM) BanksPerGroup() int {
	if d.BankGroups <= 0 {
		return d.BanksPerChannel
	}
	return d.BanksPerChannel / d.BankGroups
}

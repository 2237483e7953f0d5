package sim

import (
	"encoding/csv"
	"io"
	"sort"
	"strconv"
)

// IterationCSV writes one CSV row per iteration: the step, simulated time, iteration
// time, batch, prefills, queue, tokens, throughput, KV use and load imbalance, then the
// utilisation of each lane group the system reports and the idle fraction of each lane
// group the first snapshot has, then the iteration's bubble share and its split by cause
// (every cause but no-work, which the share leaves out). `pimtui run --format csv` and the explorer's export share
// it, so their files have the same columns.
type IterationCSV struct {
	w        *csv.Writer
	util     []string
	bubble   []string
	wroteHdr bool
}

// NewIterationCSV starts a CSV on w; utilKeys are the system's utilisation figures
// (Engine.UtilKeys).
func NewIterationCSV(w io.Writer, utilKeys []string) *IterationCSV {
	return &IterationCSV{w: csv.NewWriter(w), util: utilKeys}
}

// Add writes one iteration's row, after the header the first time.
func (c *IterationCSV) Add(s *Snapshot) {
	if !c.wroteHdr {
		for k := range s.Metrics.Bubble {
			c.bubble = append(c.bubble, k)
		}
		sort.Strings(c.bubble)
		head := []string{"step", "time_s", "iteration_ms", "batch", "prefills", "queue", "tokens", "tok_per_s", "kv_utilization", "load_imbalance"}
		for _, k := range c.util {
			head = append(head, "util_"+k)
		}
		for _, k := range c.bubble {
			head = append(head, "bubble_"+k)
		}
		head = append(head, "bubble_share")
		for _, k := range ShareCauses() {
			head = append(head, "bubble_share_"+k.String())
		}
		c.w.Write(head)
		c.wroteHdr = true
	}
	row := []string{strconv.Itoa(s.Step), csvFloat(s.Now.Seconds()), csvFloat(s.IterTime.Milliseconds()), strconv.Itoa(s.Batch),
		strconv.Itoa(s.Prefills), strconv.Itoa(s.Queue), strconv.Itoa(s.Tokens), csvFloat(s.Metrics.StepTokPerSec),
		csvFloat(s.Metrics.KVUtil), csvFloat(s.Metrics.LoadImbalance)}
	for _, k := range c.util {
		row = append(row, csvFloat(s.Metrics.Util[k]))
	}
	for _, k := range c.bubble {
		row = append(row, csvFloat(s.Metrics.Bubble[k]))
	}
	row = append(row, csvFloat(s.Metrics.BubbleShare))
	for _, k := range ShareCauses() {
		row = append(row, csvFloat(s.Metrics.ShareByCause[k]))
	}
	c.w.Write(row)
}

// Flush writes out what is buffered and reports the first error of any write.
func (c *IterationCSV) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

func csvFloat(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

package sim

// Status is where a request is in its lifecycle.
type Status uint8

// Request states (NeuPIMs Fig. 7's Request Pool Table: Wait, Run, Done).
const (
	Waiting Status = iota
	Prefilling
	Running
	Done
)

func (s Status) String() string {
	return [...]string{"wait", "prefill", "run", "done"}[s]
}

// Request is one inference request.
type Request struct {
	ID        int
	InputLen  int
	OutputLen int
	Arrival   Time
	Generated int
	Status    Status
	Loc       int // KV location (channel, …); -1 when not placed

	Admitted   Time
	FirstToken Time
	LastToken  Time
	Finished   Time

	kBlocks, vBlocks int // KV blocks held
	reserved         int // blocks reserved for the request's full length
	prefilled        bool
	ready            Time // when its KV cache can join the decode batch (disaggregated prefill)
	window           int  // most tokens its context keeps (Dataset.LiveCap), 0 = no cap
}

// SeqLen is the number of tokens in the request's KV cache.
func (r *Request) SeqLen() int { return r.seqLenAt(0) }

// seqLenAt is SeqLen once i more tokens have been generated.
func (r *Request) seqLenAt(i int) int {
	if n := r.InputLen + r.Generated + i; r.window <= 0 || n < r.window {
		return n
	}
	return r.window
}

// FinalLen is the number of tokens in its KV cache when it generates its last token.
func (r *Request) FinalLen() int {
	if n := r.InputLen + r.OutputLen; r.window <= 0 || n < r.window {
		return n
	}
	return r.window
}

// RequestRow is a request as the request pool table shows it.
type RequestRow struct {
	ID        int
	InputLen  int
	OutputLen int
	Generated int
	Loc       int
	Status    Status
}

func (r *Request) row() RequestRow {
	return RequestRow{ID: r.ID, InputLen: r.InputLen, OutputLen: r.OutputLen, Generated: r.Generated, Loc: r.Loc, Status: r.Status}
}

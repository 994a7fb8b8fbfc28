package data

import (
	"cmp"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/tokenizer"
)

// PadID is the id padding uses: bert-base-uncased's [PAD].
const PadID int32 = 0

// DefaultBucketBatches is how many batches BucketByLength sorts together
// when BatchOptions.BucketBatches is 0 (HF's group_by_length uses
// mega-batches of 50 batches too).
const DefaultBucketBatches = 50

// prefetch is how many batches are prepared ahead of the consumer.
const prefetch = 4

// Encoder turns a text into token ids with [CLS] … [SEP] around them,
// untruncated. *tokenizer.Tokenizer is one; it must be safe for concurrent
// use.
type Encoder interface {
	Encode(text string) []int32
}

var _ Encoder = (*tokenizer.Tokenizer)(nil)

// BatchOptions configure Batches.
type BatchOptions struct {
	// BatchSize is the number of examples per batch (the labs: 8). Required.
	BatchSize int
	// MaxLength truncates longer sequences to MaxLength tokens, keeping the
	// first MaxLength−1 and the final [SEP] (HF truncation=True). 0 means
	// tokenizer.ModelMaxLength (512); otherwise at least 2.
	MaxLength int
	// Shuffle visits the examples in an order drawn from Seed; otherwise in
	// their order. Pass Seed+epoch for a new order every epoch.
	Shuffle bool
	// Seed drives the shuffle; the same seed always gives the same batches.
	Seed uint64
	// BucketByLength groups examples of similar length to cut padding: the
	// (shuffled) order is cut into chunks of BucketBatches·BatchSize
	// examples, each chunk is sorted by length (stable) and cut into
	// batches, and, when Shuffle is set, the batches of the chunk are put in
	// a seeded random order (otherwise they stay shortest first).
	BucketByLength bool
	// BucketBatches is the chunk size of BucketByLength, in batches; 0
	// means DefaultBucketBatches.
	BucketBatches int
	// DropLast drops the last, incomplete batch: the final len mod BatchSize
	// examples of the (shuffled) order are left out of the epoch.
	DropLast bool
	// PadToMultipleOf rounds each batch's padded length up to a multiple of
	// this (HF DataCollatorWithPadding's pad_to_multiple_of), never beyond
	// MaxLength. Compiled backends build one executable per input shape, so
	// fewer distinct lengths mean fewer compilations. 0 or 1: no rounding.
	PadToMultipleOf int
	// PadBatch fills a short last batch up to BatchSize with padding rows
	// (all [PAD], mask 0, label IgnoreLabel, index -1), so that every batch
	// has the same size: on compiled backends, one executable less. The
	// loss and the metrics leave such rows out.
	PadBatch bool
}

// IgnoreLabel is the label of PadBatch's padding rows: PyTorch's
// ignore_index, which the loss (nn.IgnoreIndex) and the metrics skip.
const IgnoreLabel int32 = -100

// Validate reports an option out of range, saying what is allowed.
func (o BatchOptions) Validate() error {
	if o.BatchSize <= 0 {
		return fmt.Errorf("batch size %d is not positive (allowed: 1 or more; the labs use 8)", o.BatchSize)
	}
	if o.MaxLength < 0 || o.MaxLength == 1 {
		return fmt.Errorf("max length %d is too short (allowed: 0 for %d, or 2 or more: [CLS] and [SEP] need 2)", o.MaxLength, tokenizer.ModelMaxLength)
	}
	if o.BucketBatches < 0 {
		return fmt.Errorf("bucket size %d batches is negative (allowed: 0 for %d, or a positive number of batches)", o.BucketBatches, DefaultBucketBatches)
	}
	if o.PadToMultipleOf < 0 {
		return fmt.Errorf("pad-to-multiple-of %d is negative (allowed: 0 or 1 for none, or a positive multiple)", o.PadToMultipleOf)
	}
	return nil
}

func (o BatchOptions) maxLength() int {
	if o.MaxLength == 0 {
		return tokenizer.ModelMaxLength
	}
	return o.MaxLength
}

// Batch is one tokenised, padded batch: row i is example Indices[i],
// Lengths[i] real tokens followed by [PAD] up to the longest row.
type Batch struct {
	// InputIDs are the token ids, [batch][seqLen], right-padded with PadID.
	InputIDs [][]int32
	// AttentionMask is 1 for real tokens and 0 for padding, [batch][seqLen].
	AttentionMask [][]int32
	// Labels are the examples' labels, [batch].
	Labels []int32
	// Lengths are the numbers of real tokens (after truncation), [batch].
	Lengths []int
	// Indices are the examples' positions in the slice given to Batches.
	Indices []int
}

// Size returns the number of rows, padding rows (PadBatch) included.
func (b *Batch) Size() int { return len(b.InputIDs) }

// Examples returns the number of rows that hold an example (not
// PadBatch's padding rows).
func (b *Batch) Examples() int {
	n := 0
	for _, i := range b.Indices {
		if i >= 0 {
			n++
		}
	}
	return n
}

// SeqLen returns the padded sequence length (the longest row).
func (b *Batch) SeqLen() int {
	if len(b.InputIDs) == 0 {
		return 0
	}
	return len(b.InputIDs[0])
}

// Padding returns the number of [PAD] positions in the batch.
func (b *Batch) Padding() int {
	n := 0
	for _, l := range b.Lengths {
		n += b.SeqLen() - l
	}
	return n
}

// FlatInputIDs returns the ids row-major with their dimensions
// [batch, seqLen], as tensors.FromFlatDataAndDimensions(flat, dims...)
// takes them.
func (b *Batch) FlatInputIDs() (flat []int32, dims []int) { return flatten(b.InputIDs) }

// FlatAttentionMask returns the mask row-major with its dimensions
// [batch, seqLen].
func (b *Batch) FlatAttentionMask() (flat []int32, dims []int) {
	return flatten(b.AttentionMask)
}

func flatten(rows [][]int32) ([]int32, []int) {
	seq := 0
	if len(rows) > 0 {
		seq = len(rows[0])
	}
	flat := make([]int32, 0, len(rows)*seq)
	for _, r := range rows {
		flat = append(flat, r...)
	}
	return flat, []int{len(rows), seq}
}

// Tensors returns the batch as GoMLX tensors by input name: "input_ids"
// and "attention_mask" int32 [batch, seqLen], "labels" int32 [batch] (the
// layout of mase/train's Batch).
func (b *Batch) Tensors() map[string]*tensors.Tensor {
	ids, dims := b.FlatInputIDs()
	mask, _ := b.FlatAttentionMask()
	return map[string]*tensors.Tensor{
		"input_ids":      tensors.FromFlatDataAndDimensions(ids, dims...),
		"attention_mask": tensors.FromFlatDataAndDimensions(mask, dims...),
		"labels":         tensors.FromFlatDataAndDimensions(slices.Clone(b.Labels), len(b.Labels)),
	}
}

// NumBatches returns the number of batches of an epoch over n examples:
// ⌈n/batchSize⌉, or ⌊n/batchSize⌋ with dropLast (25,000 IMDb reviews at
// batch 8: 3,125). It is 0 when n or batchSize is not positive.
func NumBatches(n, batchSize int, dropLast bool) int {
	if n <= 0 || batchSize <= 0 {
		return 0
	}
	if dropLast {
		return n / batchSize
	}
	return (n + batchSize - 1) / batchSize
}

// Batches yields one epoch over examples as tokenised batches, encoding
// texts lazily with enc (a few batches ahead, in a background goroutine
// that stops when the loop does). Invalid options are yielded as an error
// before any batch. For several epochs over the same examples, Pretokenize
// once and use Pretokenized.Batches.
//
// This is HF's tokenizer(text, truncation=True) followed by
// DataCollatorWithPadding: each batch is padded on the right with [PAD]=0
// (mask 0) to its own longest sequence.
func Batches(examples []Example, enc Encoder, opts BatchOptions) iter.Seq2[*Batch, error] {
	labels := make([]int32, len(examples))
	for i, e := range examples {
		labels[i] = int32(e.Label)
	}
	encode := func(idx []int) [][]int32 {
		return encodeParallel(len(idx), func(j int) []int32 { return enc.Encode(examples[idx[j]].Text) })
	}
	return batches(len(examples), labels, encode, opts)
}

// Pretokenized holds the untruncated token ids of a list of examples, so
// that several epochs tokenise them only once.
type Pretokenized struct {
	ids    [][]int32
	labels []int32
}

// Pretokenize encodes every example with enc, on all CPUs.
func Pretokenize(examples []Example, enc Encoder) *Pretokenized {
	p := &Pretokenized{labels: make([]int32, len(examples))}
	for i, e := range examples {
		p.labels[i] = int32(e.Label)
	}
	p.ids = encodeParallel(len(examples), func(i int) []int32 { return enc.Encode(examples[i].Text) })
	return p
}

// Len returns the number of examples.
func (p *Pretokenized) Len() int { return len(p.ids) }

// MaxID returns the largest token id of every example (−1 when there is
// none), so a model's vocabulary can be checked before any training.
func (p *Pretokenized) MaxID() int32 {
	m := int32(-1)
	for _, row := range p.ids {
		for _, id := range row {
			m = max(m, id)
		}
	}
	return m
}

// IDs returns example i's untruncated ids (shared; do not modify).
func (p *Pretokenized) IDs(i int) []int32 { return p.ids[i] }

// Batches yields one epoch as Batches does, from the cached ids.
func (p *Pretokenized) Batches(opts BatchOptions) iter.Seq2[*Batch, error] {
	get := func(idx []int) [][]int32 {
		out := make([][]int32, len(idx))
		for j, i := range idx {
			out[j] = p.ids[i]
		}
		return out
	}
	return batches(len(p.ids), p.labels, get, opts)
}

// encodeParallel returns f(0..n-1), computed on up to GOMAXPROCS
// goroutines.
func encodeParallel(n int, f func(i int) []int32) [][]int32 {
	out := make([][]int32, n)
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				out[i] = f(i)
			}
		}()
	}
	wg.Wait()
	return out
}

type batchOrErr struct {
	b   *Batch
	err error
}

// batches plans the epoch (order, buckets) and builds the batches in a
// producer goroutine. ids returns the untruncated ids of the given
// examples.
func batches(n int, labels []int32, ids func(idx []int) [][]int32, opts BatchOptions) iter.Seq2[*Batch, error] {
	return func(yield func(*Batch, error) bool) {
		if err := opts.Validate(); err != nil {
			yield(nil, err)
			return
		}
		maxLen := opts.maxLength()
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		r := newRNG(opts.Seed)
		if opts.Shuffle {
			r.shuffle(order)
		}
		if opts.DropLast {
			order = order[:n-n%opts.BatchSize]
		}
		chunk := opts.BatchSize
		if opts.BucketByLength {
			chunk *= cmp.Or(opts.BucketBatches, DefaultBucketBatches)
		}

		done := make(chan struct{})
		defer close(done)
		out := make(chan batchOrErr, prefetch)
		go func() {
			defer close(out)
			send := func(x batchOrErr) bool {
				select {
				case out <- x:
					return true
				case <-done:
					return false
				}
			}
			for start := 0; start < len(order); start += chunk {
				idx := order[start:min(start+chunk, len(order))]
				rows := ids(idx)
				for j, row := range rows {
					if len(row) == 0 {
						send(batchOrErr{err: fmt.Errorf("example %d encoded to no tokens (an encoder must return at least [CLS] and [SEP])", idx[j])})
						return
					}
					rows[j] = truncate(row, maxLen)
				}
				pos := make([]int, len(idx)) // positions within the chunk
				for j := range pos {
					pos[j] = j
				}
				if opts.BucketByLength {
					slices.SortStableFunc(pos, func(a, b int) int { return cmp.Compare(len(rows[a]), len(rows[b])) })
				}
				var groups [][]int
				for s := 0; s < len(pos); s += opts.BatchSize {
					groups = append(groups, pos[s:min(s+opts.BatchSize, len(pos))])
				}
				if opts.BucketByLength && opts.Shuffle {
					perm := make([]int, len(groups))
					for i := range perm {
						perm[i] = i
					}
					r.shuffle(perm)
					shuffled := make([][]int, len(groups))
					for i, p := range perm {
						shuffled[i] = groups[p]
					}
					groups = shuffled
				}
				for _, g := range groups {
					b := makeBatch(g, idx, rows, labels, opts.PadToMultipleOf, maxLen)
					if opts.PadBatch {
						b.padRows(opts.BatchSize)
					}
					if !send(batchOrErr{b: b}) {
						return
					}
				}
			}
		}()
		for x := range out {
			if !yield(x.b, x.err) || x.err != nil {
				return
			}
		}
	}
}

// truncate keeps the first maxLen−1 ids and the last one ([SEP]); ids is
// not modified.
func truncate(ids []int32, maxLen int) []int32 {
	if len(ids) <= maxLen {
		return ids
	}
	out := make([]int32, maxLen)
	copy(out, ids[:maxLen-1])
	out[maxLen-1] = ids[len(ids)-1]
	return out
}

// makeBatch pads rows[g[...]] (chunk positions) to their longest, rounded
// up to a multiple of multiple (at most maxLen).
func makeBatch(g, idx []int, rows [][]int32, labels []int32, multiple, maxLen int) *Batch {
	seq := 0
	for _, p := range g {
		seq = max(seq, len(rows[p]))
	}
	if multiple > 1 && seq%multiple != 0 {
		seq = max(seq, min(maxLen, (seq/multiple+1)*multiple))
	}
	b := &Batch{
		InputIDs:      make([][]int32, len(g)),
		AttentionMask: make([][]int32, len(g)),
		Labels:        make([]int32, len(g)),
		Lengths:       make([]int, len(g)),
		Indices:       make([]int, len(g)),
	}
	idsFlat := make([]int32, len(g)*seq)
	maskFlat := make([]int32, len(g)*seq)
	for i, p := range g {
		row := rows[p]
		b.InputIDs[i] = idsFlat[i*seq : (i+1)*seq : (i+1)*seq]
		b.AttentionMask[i] = maskFlat[i*seq : (i+1)*seq : (i+1)*seq]
		copy(b.InputIDs[i], row)
		for j := len(row); j < seq; j++ {
			b.InputIDs[i][j] = PadID
		}
		for j := range row {
			b.AttentionMask[i][j] = 1
		}
		b.Labels[i] = labels[idx[p]]
		b.Lengths[i] = len(row)
		b.Indices[i] = idx[p]
	}
	return b
}

// padRows appends padding rows (PadBatch) until the batch has size rows.
func (b *Batch) padRows(size int) {
	seq := b.SeqLen()
	for len(b.InputIDs) < size {
		b.InputIDs = append(b.InputIDs, make([]int32, seq)) // PadID is 0
		b.AttentionMask = append(b.AttentionMask, make([]int32, seq))
		b.Labels = append(b.Labels, IgnoreLabel)
		b.Lengths = append(b.Lengths, 0)
		b.Indices = append(b.Indices, -1)
	}
}

package compress

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/stats"
)

// Chance is the accuracy of guessing on the labs' balanced test splits.
const Chance = 0.5

// errorNote is the sentence that says how far one accuracy on n examples
// can be trusted, at the accuracy p.
func errorNote(p float64, n int) string {
	return fmt.Sprintf("An accuracy near %.2f measured on %d test examples carries a sampling error of about ±%.1f points "+
		"(one standard error); two such accuracies are told apart here only when they differ by more than %.1f points "+
		"(twice the error of their difference).", p, n, 100*stats.AccuracyError(p, n), 100*stats.Bound(p, p, n))
}

// ordered sorts the widths or sparsities of points into those where a is
// higher than b, within the sampling error, and lower, each named by key.
func ordered[P any](points []P, n int, a, b func(P) float64, key func(P) string) (higher, within, lower []string) {
	for _, p := range points {
		switch stats.Compare(a(p), b(p), n) {
		case stats.Higher:
			higher = append(higher, key(p))
		case stats.Lower:
			lower = append(lower, key(p))
		default:
			within = append(within, key(p))
		}
	}
	return higher, within, lower
}

// list is "4, 8 and 16", or "none".
func list(xs []string) string {
	switch len(xs) {
	case 0:
		return "none"
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// WidthFindings says in Markdown bullets what a width sweep shows, each
// claim checked against the sampling error of accuracies on n test
// examples: where QAT is above, level with or below PTQ; which widths are
// at chance and which level with the float baseline; and which widths
// reach the best QAT accuracy within the error, so that the pick of best
// is not over-read.
func WidthFindings(points []WidthPoint, best WidthPoint, baseline float64, n int) string {
	if len(points) == 0 {
		return ""
	}
	key := func(p WidthPoint) string { return fmt.Sprint(p.Width) }
	var b strings.Builder
	b.WriteString("- " + errorNote(baseline, n) + "\n")
	hi, eq, lo := ordered(points, n, func(p WidthPoint) float64 { return p.QAT }, func(p WidthPoint) float64 { return p.PTQ }, key)
	fmt.Fprintf(&b, "- **QAT against PTQ**: higher at width(s) %s; level within the sampling error at %s; lower at %s.\n", list(hi), list(eq), list(lo))
	var chance, level []string
	for _, p := range points {
		if stats.Compare(p.QAT, Chance, n) != stats.Higher && stats.Compare(p.PTQ, Chance, n) != stats.Higher {
			chance = append(chance, key(p))
		}
		if stats.Compare(p.QAT, baseline, n) == stats.Within && stats.Compare(p.PTQ, baseline, n) == stats.Within {
			level = append(level, key(p))
		}
	}
	fmt.Fprintf(&b, "- **At chance** (both no better than guessing, %.2f): width(s) %s. **Level with the float baseline** %.4f "+
		"(both within the sampling error of it): width(s) %s.\n", Chance, list(chance), baseline, list(level))
	var near []string
	for _, p := range points {
		if p.Width != best.Width && stats.Compare(p.QAT, best.QAT, n) == stats.Within {
			near = append(near, fmt.Sprintf("%d (%.4f)", p.Width, p.QAT))
		}
	}
	fmt.Fprintf(&b, "- **The best width**, %d (QAT %.4f), is picked by the highest accuracy after QAT. ", best.Width, best.QAT)
	if len(near) > 0 {
		fmt.Fprintf(&b, "Width(s) %s come within the sampling error of it, so this run does not tell them apart from it: "+
			"another seed or data order may pick another.\n", list(near))
	} else {
		b.WriteString("No other width comes within the sampling error of it.\n")
	}
	return b.String()
}

// SparsityFindings says in Markdown bullets what a sparsity sweep shows
// after fine-tuning, checked against the sampling error on n test
// examples: at which sparsities L1-norm is above, level with or below
// random pruning, and where each method is no better than chance.
func SparsityFindings(points []SparsityPoint, n int) string {
	type pair struct {
		sparsity    float64
		random, l1n float64
	}
	var pairs []pair
	for _, p := range points {
		if p.Method != passes.PruneL1 {
			continue
		}
		for _, r := range points {
			if r.Method == passes.PruneRandom && r.Sparsity == p.Sparsity {
				pairs = append(pairs, pair{p.Sparsity, r.FineTuned, p.FineTuned})
			}
		}
	}
	if len(pairs) == 0 {
		return ""
	}
	slices.SortFunc(pairs, func(a, b pair) int { return int(1000*a.sparsity) - int(1000*b.sparsity) })
	key := func(p pair) string { return fmt.Sprintf("%.1f", p.sparsity) }
	var b strings.Builder
	b.WriteString("- " + errorNote(pairs[0].l1n, n) + "\n")
	hi, eq, lo := ordered(pairs, n, func(p pair) float64 { return p.l1n }, func(p pair) float64 { return p.random }, key)
	fmt.Fprintf(&b, "- **L1-norm against random, after fine-tuning**: higher at sparsity %s; level within the sampling error at %s; "+
		"lower at %s.\n", list(hi), list(eq), list(lo))
	var randomChance, l1Chance []string
	for _, p := range pairs {
		if stats.Compare(p.random, Chance, n) != stats.Higher {
			randomChance = append(randomChance, key(p))
		}
		if stats.Compare(p.l1n, Chance, n) != stats.Higher {
			l1Chance = append(l1Chance, key(p))
		}
	}
	fmt.Fprintf(&b, "- **No better than chance** (%.2f) after fine-tuning: random pruning at sparsity %s; L1-norm at %s.\n",
		Chance, list(randomChance), list(l1Chance))
	return b.String()
}

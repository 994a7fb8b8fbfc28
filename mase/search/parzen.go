package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/gomase/gomase/mase/search/studydata"
)

// This file holds the univariate Parzen estimator of the TPE sampler: a
// weighted mixture of truncated Gaussians (numeric parameters) or of
// smoothed one-hot distributions (categorical ones), plus the Gaussian tail
// arithmetic it needs, done in log space so that far tails do not underflow.

const (
	halfLog2Pi = 0.91893853320467274178 // log(2π)/2
	parzenEps  = 1e-12
)

// parzenParams are the TPE options the estimator uses.
type parzenParams struct {
	prior             bool
	priorWeight       float64
	magicClip         bool
	considerEndpoints bool
	weights           func(int) []float64
	// unscaledDensity reproduces Optuna 3.1–3.4, whose truncated-normal
	// log density lacks the −log σ term (optuna#5109, changed in 3.5).
	unscaledDensity bool
}

type parzen struct {
	dist studydata.Distribution
	// mixture weights, normalised, with their logs and running sums
	w, logW, cumW []float64

	// numeric parameters: bounds and step in the transformed (log) space
	logScale        bool
	low, high, step float64
	mus, sigmas     []float64
	logNorm         []float64 // log of each component's mass inside [low, high]
	logSig          []float64 // log σ of each component (0 when unscaledDensity)

	// categorical parameters: one distribution over the choices per component
	probs [][]float64
}

// parzenBounds returns Optuna's estimator bounds of a numeric distribution:
// log bounds for log parameters (ints widened by ½ first), bounds widened by
// half a step for stepped ones (then step > 0).
func parzenBounds(dist studydata.Distribution) (low, high, step float64, logScale bool) {
	switch d := dist.(type) {
	case studydata.FloatDistribution:
		switch {
		case d.Log:
			return math.Log(d.Low), math.Log(d.High), 0, true
		case d.Step > 0:
			return d.Low - d.Step/2, d.High + d.Step/2, d.Step, false
		}
		return d.Low, d.High, 0, false
	case studydata.IntDistribution:
		if d.Log {
			return math.Log(float64(d.Low) - 0.5), math.Log(float64(d.High) + 0.5), 0, true
		}
		q := float64(d.Step)
		return float64(d.Low) - q/2, float64(d.High) + q/2, q, false
	}
	return 0, 0, 0, false
}

// newParzen builds the estimator of observations obs (internal values, oldest
// first) of a parameter with distribution dist.
func newParzen(obs []float64, dist studydata.Distribution, p parzenParams) (*parzen, error) {
	n := len(obs)
	prior := p.prior || n == 0
	w := make([]float64, 0, n+1)
	if n > 0 {
		raw := p.weights(n)
		if len(raw) < n {
			return nil, fmt.Errorf("TPE weights function returned %d weights for %d observations; it must return one per observation", len(raw), n)
		}
		sum := 0.0
		for _, x := range raw[:n] {
			if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("TPE weights function returned %v for %d observations; weights must be finite and ≥ 0", raw[:n], n)
			}
			sum += x
		}
		if sum <= 0 {
			return nil, fmt.Errorf("TPE weights function returned only zeros for %d observations; at least one weight must be > 0", n)
		}
		w = append(w, raw[:n]...)
	}
	if prior {
		w = append(w, p.priorWeight)
	}
	total := 0.0
	for _, x := range w {
		total += x
	}
	pz := &parzen{dist: dist, w: w, logW: make([]float64, len(w)), cumW: make([]float64, len(w))}
	acc := 0.0
	for i := range w {
		w[i] /= total
		pz.logW[i] = math.Log(w[i])
		acc += w[i]
		pz.cumW[i] = acc
	}

	if cd, ok := dist.(studydata.CategoricalDistribution); ok {
		// Each observation is a distribution putting 1 + priorWeight/K on its
		// choice and priorWeight/K on the others (K = components), normalised;
		// the prior component is uniform.
		k := len(cd.Choices)
		rows := n
		if prior {
			rows++
		}
		fill := p.priorWeight / float64(rows)
		pz.probs = make([][]float64, rows)
		for r := range rows {
			row := make([]float64, k)
			for c := range row {
				row[c] = fill
			}
			if r < n {
				row[int(obs[r])]++
			}
			sum := 0.0
			for _, v := range row {
				sum += v
			}
			for c := range row {
				row[c] /= sum
			}
			pz.probs[r] = row
		}
		return pz, nil
	}

	pz.low, pz.high, pz.step, pz.logScale = parzenBounds(dist)
	low, high := pz.low, pz.high
	mus := make([]float64, n, n+1)
	for i, x := range obs {
		if pz.logScale {
			x = math.Log(x)
		}
		mus[i] = x
	}
	if prior {
		mus = append(mus, 0.5*(low+high))
	}
	m := len(mus)
	// Bandwidth of each component: the larger distance to its neighbours in
	// sorted order, the bounds acting as outer neighbours (Optuna's rule).
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return mus[order[a]] < mus[order[b]] })
	sorted := make([]float64, m+2)
	sorted[0], sorted[m+1] = low, high
	for i, j := range order {
		sorted[i+1] = mus[j]
	}
	sortedSig := make([]float64, m)
	for i := range m {
		sortedSig[i] = math.Max(sorted[i+1]-sorted[i], sorted[i+2]-sorted[i+1])
	}
	if !p.considerEndpoints && m >= 2 {
		sortedSig[0] = sorted[2] - sorted[1]
		sortedSig[m-1] = sorted[m] - sorted[m-1]
	}
	maxSig := high - low
	minSig := parzenEps
	if p.magicClip {
		minSig = (high - low) / math.Min(100, 1+float64(m))
	}
	sigmas := make([]float64, m)
	for i, j := range order {
		sigmas[j] = math.Max(minSig, math.Min(maxSig, sortedSig[i]))
	}
	if prior {
		sigmas[m-1] = high - low
	}
	pz.mus, pz.sigmas = mus, sigmas
	pz.logNorm = make([]float64, m)
	pz.logSig = make([]float64, m)
	for i := range mus {
		pz.logNorm[i] = logGaussMass((low-mus[i])/sigmas[i], (high-mus[i])/sigmas[i])
		if !p.unscaledDensity {
			pz.logSig[i] = math.Log(sigmas[i])
		}
	}
	return pz, nil
}

// component draws a mixture component by weight.
func (pz *parzen) component(rng *rand.Rand) int {
	u := rng.Float64()
	i := sort.SearchFloat64s(pz.cumW, u)
	if i >= len(pz.cumW) {
		i = len(pz.cumW) - 1
	}
	return i
}

// sample draws one value (internal representation) from the mixture.
func (pz *parzen) sample(rng *rand.Rand) float64 {
	k := pz.component(rng)
	if pz.probs != nil {
		u := rng.Float64()
		row := pz.probs[k]
		acc, idx := 0.0, 0
		for _, p := range row {
			acc += p
			if acc < u {
				idx++
			}
		}
		return float64(min(idx, len(row)-1))
	}
	mu, sig := pz.mus[k], pz.sigmas[k]
	z := truncnormPPF(rng.Float64(), (pz.low-mu)/sig, (pz.high-mu)/sig)
	return pz.fromTransformed(mu + sig*z)
}

// fromTransformed maps a point of the estimator's space back onto the
// distribution's values: exp for log parameters, rounding onto the step grid.
func (pz *parzen) fromTransformed(y float64) float64 {
	switch d := pz.dist.(type) {
	case studydata.FloatDistribution:
		switch {
		case d.Log:
			return clamp(math.Exp(y), d.Low, d.High)
		case d.Step > 0:
			return roundToStep(y, d.Low, d.High, d.Step)
		}
		return clamp(y, d.Low, d.High)
	case studydata.IntDistribution:
		lo, hi := float64(d.Low), float64(d.High)
		if d.Log {
			return clamp(math.RoundToEven(math.Exp(y)), lo, hi)
		}
		return roundToStep(y, lo, hi, float64(d.Step))
	}
	return y
}

// logPdf returns the log density (log probability for stepped and
// categorical parameters) of the internal value x under the mixture.
func (pz *parzen) logPdf(x float64) float64 {
	if pz.probs != nil {
		c := int(x)
		s := 0.0
		for k, row := range pz.probs {
			s += pz.w[k] * row[c]
		}
		return math.Log(s)
	}
	y := x
	if pz.logScale {
		y = math.Log(x)
	}
	maxv := math.Inf(-1)
	terms := make([]float64, len(pz.mus))
	for k, mu := range pz.mus {
		sig := pz.sigmas[k]
		var lp float64
		if pz.step > 0 {
			lb := math.Max(y-pz.step/2, pz.low)
			ub := math.Min(y+pz.step/2, pz.high)
			lp = logGaussMass((lb-mu)/sig, (ub-mu)/sig) - pz.logNorm[k]
		} else if y < pz.low || y > pz.high {
			lp = math.Inf(-1)
		} else {
			z := (y - mu) / sig
			lp = -0.5*z*z - halfLog2Pi - pz.logSig[k] - pz.logNorm[k]
		}
		terms[k] = lp + pz.logW[k]
		maxv = math.Max(maxv, terms[k])
	}
	if math.IsInf(maxv, -1) {
		return maxv
	}
	s := 0.0
	for _, t := range terms {
		s += math.Exp(t - maxv)
	}
	return maxv + math.Log(s)
}

// ---- Gaussian arithmetic

// ndtr is the standard normal CDF Φ(x).
func ndtr(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// logNdtr is log Φ(x), accurate far into the left tail.
func logNdtr(x float64) float64 {
	switch {
	case x > 6:
		return math.Log1p(-0.5 * math.Erfc(x/math.Sqrt2))
	case x > -30:
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	}
	// Asymptotic series: Φ(x) ≈ φ(x)/(−x) · (1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸).
	r := 1 / (x * x)
	s := 1 - r*(1-r*(3-r*(15-r*105)))
	return -0.5*x*x - math.Log(-x) - halfLog2Pi + math.Log(s)
}

// logDiffExp returns log(exp(a) − exp(b)) for a ≥ b.
func logDiffExp(a, b float64) float64 {
	if math.IsInf(b, -1) {
		return a
	}
	if b >= a {
		return math.Inf(-1)
	}
	return a + math.Log1p(-math.Exp(b-a))
}

// logAddExp returns log(exp(a) + exp(b)).
func logAddExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	m := math.Max(a, b)
	return m + math.Log1p(math.Exp(-math.Abs(a-b)))
}

// logGaussMass returns log(Φ(b) − Φ(a)) for a ≤ b, stable in both tails.
func logGaussMass(a, b float64) float64 {
	switch {
	case a >= b:
		return math.Inf(-1)
	case b <= 0:
		return logDiffExp(logNdtr(b), logNdtr(a))
	case a >= 0:
		return logDiffExp(logNdtr(-a), logNdtr(-b))
	}
	return math.Log1p(-ndtr(a) - ndtr(-b))
}

// ndtriExp returns x with log Φ(x) = lp (the normal quantile of exp(lp)).
func ndtriExp(lp float64) float64 {
	if lp >= 0 {
		return math.Inf(1)
	}
	if math.IsInf(lp, -1) {
		return math.Inf(-1)
	}
	if lp > -math.Ln2 { // p > ½: use the symmetry Φ⁻¹(p) = −Φ⁻¹(1 − p)
		return -ndtriExp(math.Log(-math.Expm1(lp)))
	}
	var x float64
	if lp > -20 {
		x = math.Sqrt2 * math.Erfinv(2*math.Exp(lp)-1)
	} else {
		t := -2 * lp
		x = -math.Sqrt(t - math.Log(t) - 2*halfLog2Pi)
	}
	// Newton steps on log Φ(x) − lp; d/dx log Φ(x) = φ(x)/Φ(x).
	for range 4 {
		l := logNdtr(x)
		dx := (l - lp) / math.Exp(-0.5*x*x-halfLog2Pi-l)
		if math.IsNaN(dx) || math.IsInf(dx, 0) {
			break
		}
		x -= dx
		if math.Abs(dx) < 1e-12*math.Max(1, math.Abs(x)) {
			break
		}
	}
	return x
}

// truncnormPPF is the quantile u ∈ [0, 1) of the standard normal truncated
// to [a, b].
func truncnormPPF(u, a, b float64) float64 {
	if a >= 0 { // right tail: mirror into the left one
		return -truncnormPPF(1-u, -b, -a)
	}
	lp := logAddExp(logNdtr(a), math.Log(u)+logGaussMass(a, b))
	return clamp(ndtriExp(lp), a, b)
}

#!/usr/bin/python3
# Regenerates parzen_optuna31.json: log densities of Optuna 3.1.0's (Debian python3-optuna) private
# _ParzenEstimator on the cases of TestParzenMatchesOptuna. Run: /usr/bin/python3 parzen_optuna.py > parzen_optuna31.json
import numpy as np, json
from optuna import distributions as D
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator, _ParzenEstimatorParameters
from optuna.samplers._tpe.sampler import default_weights
P = _ParzenEstimatorParameters(True, 1.0, True, False, default_weights, False)
cases = [
  ("float", D.FloatDistribution(-5, 5), [0.5, 1.2, -3, 4.9], [-4, 0, 1, 4.99, 1.2]),
  ("flog", D.FloatDistribution(1e-5, 1e-1, log=True), [1e-3, 2e-4, 0.05], [1e-5, 1e-3, 0.01, 0.0999]),
  ("intstep", D.IntDistribution(0, 10, step=2), [2, 4, 4, 10], [0, 2, 4, 6, 10]),
  ("intlog", D.IntDistribution(1, 100, log=True), [3, 50, 7], [1, 3, 10, 100]),
  ("fstep", D.FloatDistribution(0, 1, step=0.1), [0.3, 0.3, 0.9], [0.0, 0.3, 0.5, 1.0]),
  ("cat", D.CategoricalDistribution([1,2,3,4,5]), [0, 2, 2, 4], [0, 1, 2, 3, 4]),
  ("empty", D.FloatDistribution(-5, 5), [], [-4, 0, 4]),
  ("ramp", D.FloatDistribution(0, 1), list(np.linspace(0.01, 0.99, 30) ** 2), [0.0, 0.1, 0.5, 0.9]),
  ("far", D.FloatDistribution(0, 1), [0.0, 0.001, 0.002], [0.999, 0.5]),
  ("farstep", D.IntDistribution(0, 1000), [0, 1, 2], [1000, 500, 3]),
]
out = {}
for name, d, obs, pts in cases:
    pe = _ParzenEstimator({"x": np.asarray(obs, dtype=float) if not isinstance(d, D.CategoricalDistribution) else np.asarray(obs, dtype=float)}, {"x": d}, P)
    lp = pe.log_pdf({"x": np.asarray(pts)})
    out[name] = {"mus": None if pe._mus["x"] is None else list(pe._mus["x"]), "sigmas": None if pe._sigmas["x"] is None else list(pe._sigmas["x"]), "w": list(pe._weights), "logpdf": list(lp)}
print(json.dumps(out))

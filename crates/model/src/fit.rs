//! Weighted least-squares fit of `T = C + P·p + H·h`, with standard errors,
//! 95 % confidence intervals, R², and residuals.
//!
//! Timing noise is roughly proportional to the time measured (a 300 ns point
//! wobbles by more nanoseconds than a 20 ns point), so the fit minimises
//! *relative* squared error: each observation has weight `1/m²`, `m` being
//! the mean of the repeated measurements at its grid point (the mean, not the
//! observation itself, so that a fast outlier does not weigh more). The error
//! model is then `Var(T_i) = σ² m_i²`, σ is estimated from the weighted
//! residuals with `n − 3` degrees of freedom, the covariance of the
//! parameters is `σ² (XᵀWX)⁻¹`, and the intervals use Student's t.

use crate::stats;
use serde::{Deserialize, Serialize};

/// One observation: packet length `p` (bytes), steps `h`, time per packet
/// `t` (ns), weight `w`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Obs {
    /// Packet length in bytes (as the software sees it).
    pub p: f64,
    /// Parse-and-lookup steps.
    pub h: f64,
    /// Time per packet in nanoseconds.
    pub t: f64,
    /// Weight (1/m² for relative least squares).
    pub w: f64,
}

/// A fitted parameter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// Estimate.
    pub value: f64,
    /// Standard error.
    pub se: f64,
    /// Lower end of the 95 % confidence interval.
    pub ci_low: f64,
    /// Upper end of the 95 % confidence interval.
    pub ci_high: f64,
}

/// A residual, for the worst-points list.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Residual {
    /// Packet length.
    pub p: f64,
    /// Steps.
    pub h: f64,
    /// Measured ns per packet.
    pub measured: f64,
    /// Model ns per packet.
    pub predicted: f64,
    /// (measured − predicted) / predicted.
    pub relative: f64,
}

/// The result of a fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// Constant per-packet cost C (ns).
    pub c: Param,
    /// Per-byte cost P (ns/byte).
    pub p: Param,
    /// Per-step cost H (ns/step).
    pub h: Param,
    /// Covariance of (C, P, H).
    pub cov: [[f64; 3]; 3],
    /// Observations.
    pub n: usize,
    /// Degrees of freedom (n − 3).
    pub dof: usize,
    /// Ordinary R²: 1 − Σ(t − t̂)² / Σ(t − t̄)², unweighted.
    pub r2: f64,
    /// Weighted R² (the fit's own criterion).
    pub r2_weighted: f64,
    /// Residual standard deviation σ, relative (e.g. 0.01 = 1 %).
    pub sigma_rel: f64,
    /// Largest |relative residual| over all observations.
    pub max_rel_residual: f64,
    /// Observations with |relative residual| above 3 %.
    pub above_3pct: usize,
    /// The worst observations, worst first (at most 8).
    pub worst: Vec<Residual>,
}

impl Fit {
    /// Predicted ns per packet for length `p` and `h` steps.
    pub fn predict(&self, p: f64, h: f64) -> f64 {
        self.c.value + self.p.value * p + self.h.value * h
    }

    /// Standard error of the predicted mean time at `(p, h)` (from the
    /// parameter covariance; it does not include run-to-run noise).
    pub fn predict_se(&self, p: f64, h: f64) -> f64 {
        quad_form(&self.cov, [1.0, p, h]).max(0.0).sqrt()
    }
}

/// xᵀ M x.
pub fn quad_form(m: &[[f64; 3]; 3], x: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        for j in 0..3 {
            s += x[i] * m[i][j] * x[j];
        }
    }
    s
}

/// Inverse of a symmetric positive definite 3×3 matrix, or `None` if it is
/// (numerically) singular.
fn inverse3(a: &[[f64; 3]; 3]) -> Option<[[f64; 3]; 3]> {
    // Scale to unit diagonal so the singularity test is scale-free.
    let d: Vec<f64> = (0..3).map(|i| a[i][i].sqrt()).collect();
    if d.iter().any(|&x| x <= 0.0 || !x.is_finite()) {
        return None;
    }
    let s = |i: usize, j: usize| a[i][j] / (d[i] * d[j]);
    let cof = |i: usize, j: usize| {
        let r: Vec<usize> = (0..3).filter(|&k| k != i).collect();
        let c: Vec<usize> = (0..3).filter(|&k| k != j).collect();
        let m = s(r[0], c[0]) * s(r[1], c[1]) - s(r[0], c[1]) * s(r[1], c[0]);
        if (i + j) & 1 == 0 {
            m
        } else {
            -m
        }
    };
    let det = s(0, 0) * cof(0, 0) + s(0, 1) * cof(0, 1) + s(0, 2) * cof(0, 2);
    if det.abs() < 1e-12 || !det.is_finite() {
        return None;
    }
    let mut inv = [[0.0; 3]; 3];
    for (i, row) in inv.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            // inverse of S is adj(S)/det, adj = cofactor transpose; undo scaling.
            *v = cof(j, i) / det / (d[i] * d[j]);
        }
    }
    Some(inv)
}

/// Weights `1/m²`, `m` the mean time of the observations sharing (p, h).
pub fn relative_weights(pts: &[(f64, f64, f64)]) -> Vec<f64> {
    pts.iter()
        .map(|&(p, h, _)| {
            let same: Vec<f64> = pts
                .iter()
                .filter(|q| q.0 == p && q.1 == h)
                .map(|q| q.2)
                .collect();
            let m = stats::mean(&same);
            1.0 / (m * m)
        })
        .collect()
}

/// Fit `T = C + P·p + H·h` to `obs`.
pub fn fit(obs: &[Obs]) -> Result<Fit, String> {
    let n = obs.len();
    if n < 4 {
        return Err(format!(
            "need at least 4 observations to fit 3 parameters, have {n}"
        ));
    }
    if obs
        .iter()
        .any(|o| !(o.w > 0.0 && o.w.is_finite() && o.t.is_finite()))
    {
        return Err("observations need finite times and positive weights".into());
    }
    let mut a = [[0.0; 3]; 3];
    let mut b = [0.0; 3];
    for o in obs {
        let x = [1.0, o.p, o.h];
        for i in 0..3 {
            b[i] += o.w * x[i] * o.t;
            for j in 0..3 {
                a[i][j] += o.w * x[i] * x[j];
            }
        }
    }
    let inv = inverse3(&a).ok_or_else(|| {
        "the grid cannot separate C, P and H (it needs at least two packet lengths and two step counts)"
            .to_string()
    })?;
    let mut beta = [0.0; 3];
    for i in 0..3 {
        beta[i] = (0..3).map(|j| inv[i][j] * b[j]).sum();
    }
    let pred = |o: &Obs| beta[0] + beta[1] * o.p + beta[2] * o.h;
    let dof = n - 3;
    let wrss: f64 = obs.iter().map(|o| o.w * (o.t - pred(o)).powi(2)).sum();
    let sigma2 = wrss / dof as f64;
    let mut cov = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            cov[i][j] = sigma2 * inv[i][j];
        }
    }
    let tq = stats::t_quantile(0.975, dof as f64);
    let param = |i: usize| {
        let se = cov[i][i].max(0.0).sqrt();
        Param {
            value: beta[i],
            se,
            ci_low: beta[i] - tq * se,
            ci_high: beta[i] + tq * se,
        }
    };
    let tbar = obs.iter().map(|o| o.t).sum::<f64>() / n as f64;
    let rss: f64 = obs.iter().map(|o| (o.t - pred(o)).powi(2)).sum();
    let tss: f64 = obs.iter().map(|o| (o.t - tbar).powi(2)).sum();
    let wsum: f64 = obs.iter().map(|o| o.w).sum();
    let tbar_w = obs.iter().map(|o| o.w * o.t).sum::<f64>() / wsum;
    let wtss: f64 = obs.iter().map(|o| o.w * (o.t - tbar_w).powi(2)).sum();
    let mut res: Vec<Residual> = obs
        .iter()
        .map(|o| {
            let y = pred(o);
            Residual {
                p: o.p,
                h: o.h,
                measured: o.t,
                predicted: y,
                relative: (o.t - y) / y,
            }
        })
        .collect();
    res.sort_by(|x, y| y.relative.abs().total_cmp(&x.relative.abs()));
    let above_3pct = res.iter().filter(|r| r.relative.abs() > 0.03).count();
    let max_rel_residual = res.first().map_or(0.0, |r| r.relative.abs());
    res.truncate(8);
    Ok(Fit {
        c: param(0),
        p: param(1),
        h: param(2),
        cov,
        n,
        dof,
        r2: if tss > 0.0 { 1.0 - rss / tss } else { f64::NAN },
        r2_weighted: if wtss > 0.0 {
            1.0 - wrss / wtss
        } else {
            f64::NAN
        },
        sigma_rel: sigma2.sqrt(),
        max_rel_residual,
        above_3pct,
        worst: res,
    })
}

//! SVG plots (plotters' SVG backend: text is written as SVG text, so no
//! fonts are needed to draw).

use crate::ether::{self, Mix};
use crate::fit::Fit;
use crate::{predict, Model};
use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn e<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> String + '_ {
    move |err| format!("{}: {err}", path.display())
}

/// Measured ns per packet against packet length, one colour per step count,
/// with the fitted line for each.
pub fn fit_plot(model: &Model, path: &Path) -> Result<(), String> {
    let fit = &model.fit;
    let xmax = model.lengths.iter().copied().max().unwrap_or(1514) as f64 * 1.05;
    let ymax = model
        .points
        .iter()
        .map(|p| p.ns_per_packet)
        .fold(0.0f64, f64::max)
        .max(fit.predict(xmax, model.steps.iter().copied().max().unwrap_or(0) as f64))
        * 1.08;
    let root = SVGBackend::new(path, (960, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(e(path))?;
    let title = format!(
        "T = C + P·p + H·h ({} I/O): C = {:.2} ns, P = {:.4} ns/B, H = {:.3} ns, R² = {:.4}",
        model.io, fit.c.value, fit.p.value, fit.h.value, fit.r2
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(e(path))?;
    chart
        .configure_mesh()
        .x_desc("packet length p (bytes, without FCS)")
        .y_desc("ns per packet")
        .draw()
        .map_err(e(path))?;
    for (i, &h) in model.steps.iter().enumerate().rev() {
        let c = COLORS[i % COLORS.len()];
        let pts: Vec<(f64, f64)> = model
            .points
            .iter()
            .filter(|p| p.h == h)
            .map(|p| (p.p as f64, p.ns_per_packet))
            .collect();
        chart
            .draw_series(pts.into_iter().map(|xy| Circle::new(xy, 3, c.filled())))
            .map_err(e(path))?
            .label(format!("h = {h}"))
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
        let hf = f64::from(h);
        chart
            .draw_series(LineSeries::new(
                [(0.0, fit.predict(0.0, hf)), (xmax, fit.predict(xmax, hf))],
                c.stroke_width(2),
            ))
            .map_err(e(path))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e(path))?;
    root.present().map_err(e(path))
}

/// Cores needed against steps per packet, one line per standard line rate,
/// for traffic `mix` (log scale).
pub fn cores_plot(fit: &Fit, mix: &Mix, hmax: f64, path: &Path) -> Result<(), String> {
    let series: Vec<(f64, Vec<(f64, f64)>)> = ether::STANDARD_RATES
        .iter()
        .map(|&r| {
            let pts = (0..=100)
                .map(|i| {
                    let h = hmax * f64::from(i) / 100.0;
                    (h, predict(fit, r, mix, h).cores)
                })
                .collect();
            (r, pts)
        })
        .collect();
    let ymin = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(f64::INFINITY, f64::min)
        .max(1e-3);
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(ymin * 10.0);
    let root = SVGBackend::new(path, (960, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(e(path))?;
    let traffic = if mix.parts.len() == 1 {
        format!(
            "{}-byte frames (p = {})",
            mix.parts[0].0,
            ether::packet_len(mix.parts[0].0)
        )
    } else {
        format!("{} (mean frame {:.1} bytes)", mix.name, mix.mean_size())
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Cores needed at line rate, {traffic}: C = {:.2}, P = {:.4}, H = {:.3}",
                fit.c.value, fit.p.value, fit.h.value
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0f64..hmax, (ymin * 0.8..ymax * 1.25).log_scale())
        .map_err(e(path))?;
    chart
        .configure_mesh()
        .x_desc("parse-and-lookup steps per packet h")
        .y_desc("cores (log scale)")
        .draw()
        .map_err(e(path))?;
    for (i, (r, pts)) in series.into_iter().enumerate().rev() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(e(path))?
            .label(format!("{}bE", ether::rate_name(r)))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2)));
    }
    chart
        .draw_series(LineSeries::new([(0.0, 1.0), (hmax, 1.0)], BLACK.mix(0.5)))
        .map_err(e(path))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e(path))?;
    root.present().map_err(e(path))
}

/// Write the standard plots into `dir`: `fit.svg`, `cores-64.svg`,
/// `cores-1518.svg` and `cores-imix.svg`. Returns the files written.
pub fn write_all(model: &Model, dir: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
    let mut out = Vec::new();
    let f = dir.join("fit.svg");
    fit_plot(model, &f)?;
    out.push(f);
    for (name, mix) in [
        ("cores-64.svg", Mix::single(64)),
        ("cores-1518.svg", Mix::single(1518)),
        ("cores-imix.svg", Mix::imix()),
    ] {
        let f = dir.join(name);
        cores_plot(&model.fit, &mix, 200.0, &f)?;
        out.push(f);
    }
    Ok(out)
}

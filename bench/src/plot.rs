//! The soak's plot: resident memory, write p99 and watch lag p99 per second, three panels over
//! one time axis, as SVG (plotters' SVG backend writes text as SVG text: no fonts needed).

use plotters::prelude::*;

/// One second: RSS MiB, write p99 ms, watch lag p99 ms.
type Point = (f64, f64, f64);
/// A panel: its label, its value of a second, its colour.
type Column = (&'static str, fn(&Point) -> f64, RGBColor);

/// Draws `series` (per second: RSS MiB, write p99 ms, watch lag p99 ms; NaN where nothing
/// happened that second) to `path`.
pub fn soak(path: &std::path::Path, title: &str, series: &[(f64, f64, f64)]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    let root = SVGBackend::new(path, (900, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(|e| err(&e))?;
    let panels = root.split_evenly((3, 1));
    let secs = series.len().max(2) as f64;
    let columns: [Column; 3] = [
        ("RSS (MiB)", |s| s.0, BLUE),
        ("write p99 (ms)", |s| s.1, RED),
        ("watch lag p99 (ms)", |s| s.2, GREEN),
    ];
    for (panel, (label, pick, color)) in panels.iter().zip(columns) {
        let points: Vec<(f64, f64)> = series
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, pick(s)))
            .filter(|(_, v)| v.is_finite())
            .collect();
        let top = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..secs, 0.0..top)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc(label)
            .light_line_style(WHITE)
            .draw()
            .map_err(|e| err(&e))?;
        chart.draw_series(LineSeries::new(points, &color)).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))
}

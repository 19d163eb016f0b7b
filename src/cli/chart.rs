//! `cargo run --release -- chart WARM.jsonl COLD.jsonl > chart.svg`: a bar chart of every
//! row's same-bytes copy ratio (`ratio_to_copy`) from two `bench --json` runs, warm (after
//! warming runs) and cold (`--warm 0`), with the issue's target lines at 0.5 and 0.8.

use std::fmt::Write;

/// (part, op, shape and dtype, ratio) of each JSON line that has a `ratio_to_copy`: a row is
/// named by its part, op, shape and element type (the copy part times `nchw_to_nhwc` of one
/// shape in f32 and in f16).
fn load(path: &str) -> Result<Vec<(String, String, String, f64)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{path}: bad JSON line: {e}"))?;
        if let Some(r) = v["ratio_to_copy"].as_f64() {
            rows.push((v["part"].as_str().unwrap_or("conv").to_string(), v["op"].as_str().unwrap_or("?").to_string(), format!("{} {}", v["shape"], v["dtype"].as_str().unwrap_or("f32")), r));
        }
    }
    if rows.is_empty() {
        return Err(format!("{path} holds no `bench --json` row with a ratio_to_copy (a table, or rows of another part?)"));
    }
    Ok(rows)
}

/// The SVG text of the chart.
pub fn svg(warm_path: &str, cold_path: &str) -> Result<String, String> {
    let warm = load(warm_path)?;
    let cold = load(cold_path)?;
    let (left, bar, gap, width) = (330.0, 9.0, 8.0, 420.0);
    // The scale ends at 1.25: longer bars (the adapter's own buffer copy, a host memcpy on
    // lavapipe) are clipped there, their figure written beside them.
    let max = 1.25;
    let x = |r: f64| left + r.min(max) / max * width;
    let height = 60.0 + warm.len() as f64 * (2.0 * bar + gap) + 30.0;
    let mut s = String::new();
    let w = |s: &mut String, t: String| {
        let _ = writeln!(s, "{t}");
    };
    w(&mut s, format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" font-family="sans-serif" font-size="11">"#, left + width + 60.0));
    w(&mut s, r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="18" font-size="13">GB/s over a contiguous copy kernel moving the same bytes (same run, same warm-up)</text>"#.to_string());
    w(&mut s, format!(r##"<rect x="{left}" y="28" width="10" height="8" fill="#3b6ea5"/><text x="{}" y="36">warm (after warming runs)</text><rect x="{}" y="28" width="10" height="8" fill="#e39b3b"/><text x="{}" y="36">cold (--warm 0)</text>"##, left + 14.0, left + 190.0, left + 204.0));
    for (t, label) in [(0.5, "0.5"), (0.8, "0.8"), (1.0, "1.0")] {
        let xx = x(t);
        w(&mut s, format!(r##"<line x1="{xx}" y1="44" x2="{xx}" y2="{}" stroke="#999" stroke-dasharray="3,3"/><text x="{}" y="{}">{label}</text>"##, height - 24.0, xx - 8.0, height - 10.0));
    }
    for (i, (part, op, shape, r)) in warm.iter().enumerate() {
        let y = 50.0 + i as f64 * (2.0 * bar + gap);
        // A row the cold run lacks is marked so, not drawn as a measured 0.
        let c = cold.iter().find(|c| &c.0 == part && &c.1 == op && &c.2 == shape).map(|c| c.3);
        w(&mut s, format!(r#"<text x="{}" y="{}" text-anchor="end">{part} {op} {shape}</text>"#, left - 6.0, y + bar + 3.0));
        w(&mut s, format!(r##"<rect x="{left}" y="{y}" width="{}" height="{bar}" fill="#3b6ea5"/><text x="{}" y="{}">{r:.2}</text>"##, x(*r) - left, x(*r) + 3.0, y + bar - 1.0));
        match c {
            Some(c) => w(&mut s, format!(r##"<rect x="{left}" y="{}" width="{}" height="{bar}" fill="#e39b3b"/><text x="{}" y="{}">{c:.2}</text>"##, y + bar, x(c) - left, x(c) + 3.0, y + 2.0 * bar - 1.0)),
            None => w(&mut s, format!(r#"<text x="{}" y="{}">not in the cold run</text>"#, left + 3.0, y + 2.0 * bar - 1.0)),
        }
    }
    w(&mut s, "</svg>".to_string());
    Ok(s)
}

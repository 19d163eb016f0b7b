//! `cargo run --release -- chart WARM.jsonl COLD.jsonl > chart.svg`: a bar chart of the
//! same-bytes copy ratio (`ratio_to_copy`) of every row that `--warm` applies to (the copy,
//! elementwise, reduce and pool rows) from two `bench --json` runs, warm (after warming runs)
//! and cold (`--warm 0`), with the issue's target lines at 0.5 and 0.8.

use std::fmt::Write;

/// (part, op, shape and dtype, ratio) of each JSON line that has a `ratio_to_copy` and the
/// warming runs it was timed after (`warm`: the bandwidth parts' rows; conv and matmul rows
/// warm as they need, whatever `--warm` said, and are left out): a row is named by its part,
/// op, shape and element type (the copy part times `nchw_to_nhwc` of one shape in f32 and in
/// f16). A row warmed otherwise than `cold` says (none, or some) is an error: the chart's
/// labels would be false.
fn load(path: &str, cold: bool) -> Result<Vec<(String, String, String, f64)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{path}: bad JSON line: {e}"))?;
        if let (Some(r), Some(warm)) = (v["ratio_to_copy"].as_f64(), v["warm"].as_u64()) {
            if cold != (warm == 0) {
                let want = if cold { "the cold file needs rows of `bench --json --warm 0`" } else { "the warm file needs rows timed after warming runs (`bench --json`, `--warm N` with N > 0)" };
                return Err(format!("{path}: the row {} {} was timed after {warm} warming runs; {want}", v["part"], v["op"]));
            }
            rows.push((v["part"].as_str().unwrap_or("conv").to_string(), v["op"].as_str().unwrap_or("?").to_string(), format!("{} {}", v["shape"], v["dtype"].as_str().unwrap_or("f32")), r));
        }
    }
    if rows.is_empty() {
        return Err(format!("{path} holds no `bench --json` row with a ratio_to_copy and its warming runs (a table, or rows of another part?)"));
    }
    Ok(rows)
}

/// The SVG text of the chart.
pub fn svg(warm_path: &str, cold_path: &str) -> Result<String, String> {
    let warm = load(warm_path, false)?;
    let cold = load(cold_path, true)?;
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

#[cfg(test)]
mod tests {
    /// Writes `lines` to a file of its own under the temporary folder and returns its path.
    fn file(name: &str, lines: &[&str]) -> String {
        let p = std::env::temp_dir().join(format!("strided-wgpu-chart-{}-{name}.jsonl", std::process::id()));
        std::fs::write(&p, lines.join("\n")).expect("a temporary file");
        p.to_string_lossy().into_owned()
    }

    /// Only rows timed after the warming runs the chart's labels say are drawn: a cold file
    /// with warmed rows (or the reverse) is refused, and rows without `warm` (conv, matmul)
    /// are left out.
    #[test]
    fn rows_are_warm_or_cold_as_labelled() {
        let warm = file("warm", &[r#"{"part":"copy","op":"t","shape":[2],"dtype":"f32","ratio_to_copy":0.9,"warm":8}"#, r#"{"part":"conv","op":"dw","shape":[2],"ratio_to_copy":0.4}"#]);
        let cold = file("cold", &[r#"{"part":"copy","op":"t","shape":[2],"dtype":"f32","ratio_to_copy":0.7,"warm":0}"#]);
        let svg = super::svg(&warm, &cold).expect("a chart");
        assert!(svg.contains("copy t [2] f32") && svg.contains(">0.90<") && svg.contains(">0.70<"), "{svg}");
        assert!(!svg.contains("conv dw"), "a row that ignored --warm is drawn: {svg}");
        assert!(super::svg(&cold, &warm).is_err(), "cold rows accepted as warm ones");
        assert!(super::svg(&warm, &warm).is_err(), "warm rows accepted as cold ones");
        for p in [warm, cold] {
            let _ = std::fs::remove_file(p);
        }
    }
}

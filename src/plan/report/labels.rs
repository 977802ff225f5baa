//! Where the impact chart's labels go, decided before anything is drawn: a label never lies over another.
//!
//! Labels sit in rows (lanes) above a time axis. Each thing to label occupies, in its row, the span from its
//! start to its end (a step's bar) and its label's box; a row takes a label only where nothing it already holds
//! comes within a gap of it. A label near the right edge is moved left to fit, never past the edge. A label
//! that finds no row in any of its forms (long, then shorter) is not drawn: the caller lists it in the key
//! under the chart, where it is read instead of overdrawn. Steps that start too close together to tell apart on
//! the axis are labelled once, as a range of their numbers ([`clusters`]). The text is drawn to the width the
//! layout gave it (`textLength`, adjusting the spacing between its letters, not their shapes), so the boxes
//! tested here are the boxes on screen whatever font the browser picks.

/// The width kept for a character of the labels' 10 px sans-serif font, in the chart's units: a little above
/// its average (about 4.5; a digit is 5.6), so that the text, spaced out to this width, still looks like text.
pub const CHAR_W: f64 = 5.2;
/// The room kept free between two things in a row.
pub const GAP: f64 = 6.0;

/// One thing to label: where it starts and ends on the axis, and its label in the forms it may take, the
/// preferred first.
#[derive(Debug, Clone, PartialEq)]
pub struct Want {
    pub from: f64,
    pub to: f64,
    pub texts: Vec<String>,
}

/// Where a label went: its row, the x its text starts at, the text and its width.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub row: usize,
    pub x: f64,
    pub text: String,
    pub w: f64,
    /// What the label's row holds for it: its text's box and the span it labels.
    pub from: f64,
    pub to: f64,
}

impl Placed {
    /// The part of its row it takes: the text's box and the labelled span together.
    pub fn extent(&self) -> (f64, f64) {
        (self.x.min(self.from), (self.x + self.w).max(self.to))
    }
}

/// The width the text is drawn with.
pub fn width(text: &str) -> f64 {
    text.chars().count() as f64 * CHAR_W
}

/// Lay `wants` out in `rows` rows, from `left` to `right`: each gets the first row with room for its first
/// form that fits anywhere, or None when none does.
pub fn place(wants: &[Want], rows: usize, left: f64, right: f64) -> Vec<Option<Placed>> {
    let mut row_end = vec![f64::MIN; rows];
    wants
        .iter()
        .map(|want| {
            for text in &want.texts {
                let w = width(text);
                if w > right - left {
                    continue;
                }
                let x = want.from.min(right - w).max(left);
                let p = Placed {
                    row: 0,
                    x,
                    text: text.clone(),
                    w,
                    from: want.from,
                    to: want.to.max(want.from),
                };
                let (a, b) = p.extent();
                if let Some(row) = (0..rows).find(|r| row_end[*r] + GAP <= a) {
                    row_end[row] = b;
                    return Some(Placed { row, ..p });
                }
            }
            None
        })
        .collect()
}

/// Runs of things whose starts lie within `near` of the run's first start: each run as the range of their
/// indexes. Their starts are in order (steps one after another).
pub fn clusters(starts: &[f64], near: f64) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, x) in starts.iter().enumerate() {
        match out.last_mut() {
            Some(r) if x - starts[r.start] < near => r.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overlap(a: &Placed, b: &Placed) -> bool {
        let ((a0, a1), (b0, b1)) = (a.extent(), b.extent());
        a.row == b.row && a0 < b1 + GAP && b0 < a1 + GAP
    }

    #[test]
    fn no_two_labels_overlap_in_a_crowded_chart_and_none_leaves_it() {
        // 60 steps one after another: runs of steps a pixel long, a few longer ones, and a pile of steps half a
        // pixel apart at the right edge, each wanting "N member/step-N" or "N".
        let mut x = 80.0;
        let mut wants = Vec::new();
        for n in 0..60 {
            let len = match n % 7 {
                0 => 60.0,
                3 => 20.0,
                _ => 1.0,
            };
            let from = if n >= 54 {
                930.0 + (n - 54) as f64 * 0.5
            } else {
                x
            };
            wants.push(Want {
                from,
                to: from + len,
                texts: vec![format!("{} member/step-{n}", n + 1), format!("{}", n + 1)],
            });
            x += len;
        }
        let placed = place(&wants, 4, 78.0, 936.0);
        let drawn: Vec<&Placed> = placed.iter().flatten().collect();
        assert!(
            drawn.len() >= 20,
            "a third at least are drawn: {}",
            drawn.len()
        );
        assert!(
            placed.iter().any(|p| p.is_none()),
            "the crowded ones go to the key"
        );
        for (i, a) in drawn.iter().enumerate() {
            assert!(a.x >= 78.0 && a.x + a.w <= 936.0, "{a:?} leaves the chart");
            for b in &drawn[i + 1..] {
                assert!(!overlap(a, b), "{a:?} overlaps {b:?}");
            }
        }
        // A label at the right edge is moved left to fit, not cut.
        let edge = place(
            &[Want {
                from: 930.0,
                to: 931.0,
                texts: vec!["51 drill-figures/recovery".into()],
            }],
            1,
            78.0,
            936.0,
        );
        let e = edge[0].as_ref().unwrap();
        assert_eq!(e.x + e.w, 936.0);
    }

    #[test]
    fn the_long_form_is_taken_where_it_fits_and_the_short_one_otherwise() {
        let wants = vec![
            Want {
                from: 100.0,
                to: 300.0,
                texts: vec!["1 a/long".into(), "1".into()],
            },
            Want {
                from: 110.0,
                to: 120.0,
                texts: vec!["2 b/long-name-here".into(), "2".into()],
            },
        ];
        let p = place(&wants, 2, 0.0, 1000.0);
        assert_eq!(p[0].as_ref().unwrap().text, "1 a/long");
        let second = p[1].as_ref().unwrap();
        assert_eq!(
            (second.row, second.text.as_str()),
            (1, "2 b/long-name-here")
        );
        // With one row only, the second finds no room in any form.
        assert_eq!(place(&wants, 1, 0.0, 1000.0)[1], None);
    }

    #[test]
    fn steps_that_start_close_together_are_one_run() {
        assert_eq!(
            clusters(&[0.0, 3.0, 9.0, 20.0, 50.0, 51.0], 10.0),
            vec![0..3, 3..4, 4..6]
        );
        assert!(clusters(&[], 10.0).is_empty());
    }
}

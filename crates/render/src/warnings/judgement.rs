//! The warning that one request decided whether a point meets the SLO.

use report::{Point, Report};

use super::rules::Found;
use super::WarningKind;
use crate::text::num;
use report::slo::DEFAULT_ATTAINMENT;
use report::slo::{decided_by, point_counts, point_judgement};

/// Requests in all that would put the attainment's 95% interval clear of the
/// target, at the attainment measured (`None` when it sits on the target).
pub fn requests_to_decide(attainment: f64, target: f64) -> Option<u64> {
    let gap = (attainment - target).abs();
    if gap < 1e-9 {
        return None;
    }
    let z = report::stats::Z95;
    let var = (attainment * (1.0 - attainment)).max(0.25 / 100.0);
    let n = (z * z * var / (gap * gap)).ceil();
    (n.is_finite() && n < 1e9).then_some(n as u64)
}

/// One request's outcome, reversed, would move the point across the target (an
/// attainment-form point; `decided_by` stored, or counted for an older report).
pub fn decided_by_one(report: &Report, p: &Point) -> Found {
    if report.slo.percentile.is_some() {
        return None;
    }
    let target = p
        .slo_check
        .as_ref()
        .map_or(report.slo.attainment.unwrap_or(DEFAULT_ATTAINMENT), |c| {
            c.target
        });
    let (good, sent) = point_counts(p)?;
    let by = p
        .slo_check
        .as_ref()
        .and_then(|c| c.decided_by)
        .or_else(|| decided_by(good, sent, target))?;
    if by > 1 || target >= 1.0 {
        return None;
    }
    let judgement = point_judgement(report, p).map_or("unknown".into(), |j| j.to_string());
    let need = requests_to_decide(good as f64 / sent as f64, target);
    let more = need.filter(|n| *n > sent).map_or(String::new(), |n| {
        format!("; about {n} requests in all at this attainment would decide it")
    });
    Some((
        WarningKind::DecidedByOne,
        format!(
            "{good} of {sent} requests good against a target of {}%: one request the other way would change the answer (judgement: {judgement})",
            num(target * 100.0)
        ),
        format!("Run more trials (--trials) or more requests per trial before relying on this point{more}."),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seven_of_eight_at_ninety_percent_is_decided_by_one() {
        let text = include_str!("../../../goodput/tests/render_fixtures/additive.json");
        let mut r = report::io::parse_report(text).expect("fixture parses");
        r.slo.attainment = Some(0.9);
        r.slo.percentile = None;
        let mut p = r.load[0].points[0].clone();
        p.slo_check = None;
        p.trials.clear();
        p.completed = vec![8];
        p.good = Some(vec![7]);
        p.failed = Some(vec![0]);
        let (kind, message, advice) = decided_by_one(&r, &p).unwrap();
        assert_eq!(kind, WarningKind::DecidedByOne);
        assert!(message.contains("7 of 8"), "{message}");
        assert!(message.contains("undecided"), "{message}");
        assert!(advice.contains("more trials"), "{advice}");
        assert_eq!(requests_to_decide(0.9, 0.9), None);
        assert!(requests_to_decide(0.875, 0.9).unwrap() > 8);
    }
}

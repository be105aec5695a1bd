//! The warning that one request decided whether a point meets the SLO.

use report::{Point, Report};

use super::rules::Found;
use super::WarningKind;
use crate::text::num;
use report::slo::DEFAULT_ATTAINMENT;
use report::slo::{decided_by, point_counts, point_judgement};

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
    let more = crate::point::undecided_words(report, p).map_or(String::new(), |w| format!(": {w}"));
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
        // What would decide it, computed (report::slo::decide): at 87.5%, 554
        // requests would show the point below 90%.
        assert!(
            advice.contains(
                "7 of 8 good; 554 requests at this share (546 more) would show < 90% at 95%"
            ),
            "{advice}"
        );
    }
}

//! A search's answer for one engine, the report's `capacity`: read off the
//! measured points once the search over them is over.
//!
//! `passing` and `failing` are the search's bracket (probes judged `meets` and
//! `fails`); `interval` is the capacity read off a monotone attainment curve
//! fitted to every probe, with its bootstrap interval ([`crate::stats::capacity`]).
//! A deciding probe still judged `undecided` is named in the note, with the
//! requests that would decide it.

use report::{Capacity, EngineFailure, Limit, LimitWord, Point};

use crate::define::plan::SearchConfig;
use crate::define::profile::LoadMode;
use crate::judge::search::{Found, Reason};
use crate::render::text::num;
use crate::stats::capacity::{Probe, Scale};

/// One engine's search so far: its measured points, probes and trials.
pub struct Probed<'a> {
    /// The engine's name.
    pub engine: &'a str,
    /// The search's settings.
    pub cfg: &'a SearchConfig,
    /// Its measured points.
    pub points: &'a [Point],
    /// Load levels probed.
    pub probes: u32,
    /// Trials run over every probe.
    pub trials: u32,
}

impl Probed<'_> {
    /// The point measured at `x`.
    fn point(&self, x: Option<f64>) -> Option<&Point> {
        x.and_then(|x| self.points.iter().find(|p| p.x == x))
    }

    /// The capacity of a search the engine's failure ended before it was over.
    pub fn failed(&self, e: &EngineFailure) -> Capacity {
        Capacity {
            mode: self.cfg.mode.into(),
            probes: self.probes,
            trials: self.trials,
            limited_by: Limit::Other(LimitWord::Engine),
            note: format!(
                "the search did not finish: the engine failed ({}: {})",
                e.kind, e.message
            ),
            ..Default::default()
        }
    }

    /// The capacity a finished search found.
    pub fn capacity(&self, found: &Found) -> Capacity {
        let pass = self.point(found.passing);
        let fail = self.point(found.failing);
        let limited_by = match found.reason {
            Reason::MaxPasses => Limit::Other(LimitWord::Max),
            Reason::ProbeBudget => Limit::Other(LimitWord::MaxProbes),
            Reason::Resolved | Reason::LowestFails => tool_calls_failed(fail)
                .or_else(|| missed_most(fail))
                .unwrap_or(Limit::Other(LimitWord::Slo)),
        };
        let mut note = self.note(found, pass, fail, &limited_by);
        let noisy = !found.noisy.is_empty();
        for x in &found.noisy {
            note.push_str(&self.undecided(*x, found.passing == Some(*x)));
        }
        if found.non_monotone {
            note.push_str(
                "; a higher load passed where a lower one failed: the lowest failure decides",
            );
        }
        let interval = found
            .passing
            .zip(found.failing)
            .and_then(|_| self.interval());
        if let (Some(i), Some(p), LoadMode::Concurrency) = (interval, found.passing, self.cfg.mode)
        {
            if i.estimate != p {
                note.push_str(&format!(
                    "; the attainment curve fitted to every probe puts the capacity at {}",
                    unit(self.cfg.mode, i.estimate)
                ));
            }
        }
        Capacity {
            mode: self.cfg.mode.into(),
            max_load: found.passing,
            passing: found.passing,
            failing: found.failing,
            attainment_at_max: attainment(pass).or_else(|| attainment(fail)),
            probes: self.probes,
            trials: self.trials,
            limited_by,
            noisy,
            note,
            cheapest_load: found.cheapest,
            interval,
        }
    }

    /// The capacity from the monotone curve over every probe within the search's
    /// bounds, with its 95% interval (2000 resamples, seeded by the engine's name).
    fn interval(&self) -> Option<report::CapacityInterval> {
        let probes: Vec<Probe> = self
            .points
            .iter()
            .filter(|p| p.x >= self.cfg.min - 1e-12 && p.x <= self.cfg.max + 1e-12)
            .map(probe)
            .collect();
        let scale = match self.cfg.mode {
            LoadMode::Concurrency => Scale::Integer,
            LoadMode::Rate | LoadMode::Trace => Scale::Continuous,
        };
        let seed = crate::stats::row_seed(crate::stats::DEFAULT_SEED, self.engine);
        let judged: Vec<(f64, Option<report::Judgement>)> = self
            .points
            .iter()
            .filter(|p| p.x >= self.cfg.min - 1e-12 && p.x <= self.cfg.max + 1e-12)
            .map(|p| (p.x, p.slo_check.as_ref().and_then(|c| c.judgement)))
            .collect();
        crate::stats::capacity::interval(&probes, self.cfg.target, scale, RESAMPLES, seed)
            .map(|i| crate::stats::capacity::widened(i, &judged, scale))
    }

    /// The note's words for a deciding probe at `x` still judged undecided after
    /// its trials (`stated`: the capacity is stated there).
    fn undecided(&self, x: f64, stated: bool) -> String {
        let point = self.point(Some(x));
        let check = point.and_then(|p| p.slo_check.as_ref());
        let measured = check.map_or(String::new(), |c| {
            let ci = c.ci_low.zip(c.ci_high).map_or(String::new(), |(lo, hi)| {
                let level = num(c.level.unwrap_or(0.95) * 100.0);
                format!(", {level}% interval {}–{}", pct(Some(lo)), pct(Some(hi)))
            });
            format!(
                " ({} of {} requests good{ci}, against {})",
                c.good,
                c.sent,
                pct(Some(c.target))
            )
        });
        // What would decide it: the one computation (report::slo::decide).
        let needs = point.zip(check).and_then(|(p, c)| {
            if c.form != report::SloForm::Attainment {
                return None;
            }
            let z = report::stats::sequential::z_of(c.level.unwrap_or(0.95));
            let trials = report::slo::point_trial_counts(p)
                .filter(|t| t.iter().map(|t| t.1).sum::<u64>() == c.sent)
                .unwrap_or_else(|| vec![(c.good, c.sent)]);
            let (_, d) = report::slo::judge_trials(&trials, c.target, z)?;
            report::slo::to_decide(&d, c.target, z)
        });
        let more = match needs {
            Some(report::slo::ToDecide::Requests { more, .. }) => {
                format!("about {more} more requests at this attainment would decide it")
            }
            Some(report::slo::ToDecide::Trials { more, per_trial }) => format!(
                "about {more} more trials of {per_trial} requests at this attainment and spread would decide it"
            ),
            Some(report::slo::ToDecide::OnTarget) => {
                "the attainment sits on the target: no number of requests at it would decide it"
                    .into()
            }
            None => {
                "more requests per trial or a higher max_trials_per_probe would decide it".into()
            }
        };
        let which = if stated {
            "the capacity is stated at"
        } else {
            "the first failure is placed at"
        };
        format!(
            "; {which} x={} where the SLO judgement is undecided after {} trials{measured}: {more}",
            num(x),
            self.cfg.max_trials_per_probe
        )
    }

    /// What the search found, in a sentence (`pass` and `fail` are the points at
    /// its passing and failing loads).
    fn note(
        &self,
        found: &Found,
        pass: Option<&Point>,
        fail: Option<&Point>,
        limited_by: &Limit,
    ) -> String {
        let unit = |x: f64| unit(self.cfg.mode, x);
        match (found.reason, found.passing, found.failing) {
            (Reason::LowestFails, _, Some(f)) => format!(
                "even the lowest load probed, {}, does not meet the SLO ({} attainment, {})",
                unit(f),
                pct(attainment(fail)),
                why_failed(limited_by)
            ),
            (Reason::MaxPasses, Some(p), _) => format!(
                "meets the SLO up to the search's max, {} ({} attainment); the capacity may be higher: raise max",
                unit(p),
                pct(attainment(pass))
            ),
            (Reason::ProbeBudget, p, f) => format!(
                "the probe budget ran out with the answer between {} and {}",
                p.map_or("nothing".into(), unit),
                f.map_or("max".into(), unit)
            ),
            (_, Some(p), Some(f)) => format!(
                "meets the SLO at {} ({} attainment), not at {} ({}; {})",
                unit(p),
                pct(attainment(pass)),
                unit(f),
                pct(attainment(fail)),
                why_failed(limited_by)
            ),
            _ => String::new(),
        }
    }
}

/// A load in words: `4 concurrent requests`, `2.5 requests/s`, `2x the trace's speed`.
fn unit(mode: LoadMode, x: f64) -> String {
    match mode {
        LoadMode::Concurrency => format!(
            "{} concurrent request{}",
            num(x),
            if x == 1.0 { "" } else { "s" }
        ),
        LoadMode::Rate => format!("{} requests/s", num(x)),
        LoadMode::Trace => format!("{}x the trace's speed", num(x)),
    }
}

/// Bootstrap resamples of the capacity's interval.
const RESAMPLES: usize = 2000;

/// A probe's trials as `(good, sent)`, for the capacity's interval: the per-trial
/// details, else the per-trial counts.
fn probe(p: &Point) -> Probe {
    let trials: Vec<(u64, u64)> = if p.trials.is_empty() {
        let good = p.good.clone().unwrap_or_default();
        let failed = p.failed.clone().unwrap_or_default();
        good.iter()
            .zip(&p.completed)
            .enumerate()
            .map(|(i, (g, c))| (*g, c + failed.get(i).copied().unwrap_or(0)))
            .collect()
    } else {
        p.trials
            .iter()
            .map(|t| (t.good, t.completed + t.failed))
            .collect()
    };
    Probe { x: p.x, trials }
}

/// A point's measured SLO attainment.
fn attainment(p: Option<&Point>) -> Option<f64> {
    p.and_then(|p| p.slo_check.as_ref())
        .and_then(|c| c.attainment)
}

/// Why the failing load failed, in words: the bound missed most, or too few valid
/// tool calls.
fn why_failed(limited_by: &Limit) -> String {
    match limited_by {
        Limit::Other(LimitWord::ToolCalls) => "too few valid tool calls".to_string(),
        other => format!("{other} missed most"),
    }
}

/// [`LimitWord::ToolCalls`] when a requirement on the failing load's tool calls
/// failed while its attainment met the target: the calls' validity, not latency,
/// is what the load could not hold.
fn tool_calls_failed(p: Option<&Point>) -> Option<Limit> {
    let check = p?.slo_check.as_ref()?;
    let calls_failed = check
        .tool_calls
        .iter()
        .any(|t| t.judgement == report::Judgement::Fails);
    let attained = check.attainment.is_some_and(|a| a >= check.target);
    (calls_failed && attained).then_some(Limit::Other(LimitWord::ToolCalls))
}

fn pct(a: Option<f64>) -> String {
    a.map_or("unknown".into(), |a| format!("{}%", num(a * 100.0)))
}

/// The bound the requests at a failing point missed most (`errors` for failures).
fn missed_most(p: Option<&Point>) -> Option<Limit> {
    let misses = &p?.slo_check.as_ref()?.misses;
    misses
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(k, _)| Limit::from_word(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(attainment: f64, calls: report::Judgement) -> Point {
        let check: report::SloCheck = serde_json::from_value(serde_json::json!({
            "good": 0, "sent": 100, "attainment": attainment, "target": 0.9,
            "form": "attainment", "meets": false, "misses": {"ttft": 3},
            "percentiles_ms": {}
        }))
        .expect("a minimal SLO check");
        let mut check = check;
        check.tool_calls = vec![report::ToolCallCheck {
            share: "valid".into(),
            required: 0.99,
            valid: 75,
            judged: 100,
            interval: None,
            judgement: calls,
        }];
        Point {
            slo_check: Some(check),
            ..Point::default()
        }
    }

    #[test]
    fn a_load_that_fails_only_on_its_tool_calls_is_limited_by_them() {
        use report::Judgement::{Fails, Meets};
        let p = point(0.97, Fails);
        assert_eq!(
            tool_calls_failed(Some(&p)),
            Some(Limit::Other(LimitWord::ToolCalls))
        );
        assert_eq!(
            why_failed(&Limit::Other(LimitWord::ToolCalls)),
            "too few valid tool calls"
        );
        // Latency failed too: the bound missed most says it.
        assert_eq!(tool_calls_failed(Some(&point(0.5, Fails))), None);
        assert_eq!(
            missed_most(Some(&point(0.5, Fails))),
            Some(Limit::from_word("ttft"))
        );
        // Valid calls met: not the calls.
        assert_eq!(tool_calls_failed(Some(&point(0.97, Meets))), None);
        assert_eq!(
            Limit::from_word("tool_calls"),
            Limit::Other(LimitWord::ToolCalls)
        );
    }
}

//! An engine that died during a trial: its failure recorded, and the restart the
//! profile allows.

use report::{EngineFailure, FailureKind, Notice, NoticeKind};

use super::super::Ctx;
use super::At;
use crate::define::profile::EngineSpec;
use crate::drive::engine::{EngineContext, EngineHandle};
use crate::stop::Stop;
use crate::sweep::launch::{self, SweepEngine};

/// The failure an engine that exited during a trial is recorded with (its log's
/// explanation added), said on stderr.
pub(super) fn death(
    ctx: &Ctx<'_>,
    handle: &EngineHandle,
    at: &At<'_>,
    status: String,
) -> EngineFailure {
    let name = at.name;
    let mut failure = if handle.launched() {
        EngineFailure {
            kind: FailureKind::DiedDuringTrial,
            message: format!("{name} exited during trial {} at x={}", at.t + 1, at.x),
            exit_status: Some(status),
            ..Default::default()
        }
    } else {
        // A server goodput did not launch has no exit status: why it is called
        // gone is the message.
        EngineFailure {
            kind: FailureKind::DiedDuringTrial,
            message: format!(
                "{name} stopped answering during trial {} at x={}: {status}",
                at.t + 1,
                at.x
            ),
            ..Default::default()
        }
    };
    handle.explain(&mut failure);
    say!(
        ctx,
        "{name}: {} ({})",
        failure.message,
        failure.exit_status.as_deref().unwrap_or("?")
    );
    failure
}

/// Restart number `restarts` of a dead engine: the failure is recorded, the dead
/// engine stopped and a new one started. `None` when the start failed (recorded
/// as the engine's error).
pub(super) async fn restart(
    ctx: &mut Ctx<'_>,
    name: &str,
    spec: &EngineSpec,
    engine_ctx: &EngineContext,
    dead: SweepEngine,
    failure: EngineFailure,
    restarts: u32,
) -> anyhow::Result<Option<SweepEngine>> {
    ctx.journal.sweep.engine(name).restarts.push(failure);
    if let Err(f) = dead.stop().await {
        ctx.journal.info.notices.push(Notice::engine(
            NoticeKind::EngineStop,
            name,
            format!("{name}: {}", f.message),
        ));
    }
    say!(
        ctx,
        "{name}: restarting ({restarts} of {} allowed)",
        spec.max_restarts
    );
    match launch::start(name, spec, engine_ctx, &Stop::never()).await {
        Ok(h) => Ok(Some(h)),
        Err(f) => {
            ctx.journal.sweep.engine(name).error = Some(f);
            ctx.save()?;
            Ok(None)
        }
    }
}

//! The steps after the dump: loading it into a fresh sandbox to check it against the manifest
//! (`verify-load`), and dropping the copy once the load proved the dump (`drop-copy`).

use super::*;

pub(super) fn verify_load_step(p: &RecoverParams) -> Step {
    let (p1, p2) = (p.clone(), p.clone());
    Step::new("verify-load", "Load the dump into a fresh sandbox and check it against the manifest and the damaged server's indexes", Risk::Read)
        .preview(format!("a sandbox in {}; mariadb < each file; row counts and content hashes; every loaded row against the secondary indexes the dump read, each lost range against their count", p.copy_to.join("verify").display()))
        .act(move |ctx| {
            // The load's files live in the copy's directory (it has room for them, and is 0700).
            let files = p1.copy_to.join("verify");
            safety::clear_leftover_load(&files)?;
            let root = safety::LoadRoot::new(&files)?;
            let mut sb = crate::server::sandbox::Sandbox::create(root.path(), "load", &Default::default())?;
            let r = (|| {
                sb.start(&[], Duration::from_secs(600))?;
                dump::verify_load(&p1.out, &sb.conn_spec().resolve_plain(), &ctx.tag())
            })();
            let _ = sb.destroy();
            drop(root);
            let v = r?;
            ctx.state::<Memo>().verified = Some((v.ok(), v.failures().into_iter().next()));
            Ok(serde_json::to_value(&v)?)
        })
        .post(Check::new("the dump loads with the rows and content of the manifest, and its rows agree with the damaged server's indexes", move |ctx| {
            // This run's act, or (on resume) the result the journal recorded.
            let (ok, first) = match ctx.state::<Memo>().verified.clone() {
                Some((ok, first)) => (Some(ok), first),
                None => {
                    let v = ctx.recorded_result("verify-load").and_then(|r| serde_json::from_value::<dump::manifest::Verified>(r).ok());
                    (v.as_ref().map(|v| v.ok()), v.and_then(|v| v.failures().into_iter().next()))
                }
            };
            Ok(Verdict::check(
                ok == Some(true),
                match (ok, first) {
                    (Some(true), _) => "loaded as recorded".to_string(),
                    (Some(false), Some(f)) => format!("differs ({f})"),
                    (Some(false), None) => "differs".to_string(),
                    (None, _) => "not checked".to_string(),
                },
                "loaded as recorded",
                format!("the files in {} do not load as the manifest says, or their rows are not what the damaged server's indexes held: read the verify-load result in the run's journal", p2.out.display()),
            ))
        }))
}

pub(super) fn drop_copy_step(p: &RecoverParams) -> Step {
    let (p1, p2, p3) = (p.clone(), p.clone(), p.clone());
    Step::new("drop-copy", format!("Remove the copy {} (--drop-copy)", p.copy_to.display()), Risk::Destructive)
        .preview(format!("rm -r {}", p.copy_to.display()))
        .pre(Check::after_prior("the dump finished and the copy is this run's", move |ctx| {
            if !p1.copy_to.exists() {
                return Ok(Verdict::done("removed already", "present"));
            }
            let dumped = p1.out.join("manifest.json").is_file();
            let ours = own_run(&p1.copy_to, ctx);
            Ok(Verdict::check(
                dumped && ours,
                format!("{}, {}", if dumped { "dump finished" } else { "no manifest" }, if ours { "this run's copy" } else { "not this run's copy" }),
                "dump finished, this run's copy",
                "innops removes only its own copy and only after the dump finished: check the directories",
            ))
        }))
        .act(move |_| {
            std::fs::remove_dir_all(&p2.copy_to)?;
            Ok(serde_json::json!({ "removed": p2.copy_to }))
        })
        .post(Check::new("copy removed", move |_| {
            let gone = !p3.copy_to.exists();
            Ok(Verdict::check(gone, if gone { "removed" } else { "still there" }, "removed", "the copy could not be removed: remove it yourself"))
        }))
}

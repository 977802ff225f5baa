//! Convert's pre-flight: one named check per concern, each a function of the table and the run's settings,
//! listed in the order the plan shows them. Every check reads the table as it is now ([`fresh`]), not as the plan
//! saw it.

use super::*;

/// What every pre-flight check may use.
struct Pre<'a> {
    i: &'a TableInfo,
    strategy: Strategy,
    facts: &'a ServerFacts,
    env: &'a PlanEnv,
    p: &'a ConvertParams,
}

pub(super) fn preflight(
    info: &TableInfo,
    strategy: Strategy,
    facts: &ServerFacts,
    env: &PlanEnv,
    p: &ConvertParams,
    replicas: &[crate::procedures::kit::replicas::Link],
) -> Step {
    let pre = Pre {
        i: info,
        strategy,
        facts,
        env,
        p,
    };
    let step = Step::new(
        step_id("preflight", info),
        format!("Check {} can convert", info.display()),
        Risk::Read,
    );
    // In the order the plan shows them; two apply to one kind of path only.
    [
        Some(load_thresholds_name_status_variables(&pre)),
        Some(not_marked_as_crashed(&pre)),
        Some(myisam_table(&pre)),
        Some(no_merge_table_over_it(&pre)),
        Some(auto_increment_leads_an_index(&pre)),
        matches!(strategy, Strategy::Alter | Strategy::Online)
            .then(|| no_default_from_a_sequence(&pre)),
        Some(auto_increment_table_option(&pre)),
        Some(column_names_innodb_accepts(&pre)),
        Some(files_in_the_datadir(&pre)),
        Some(rows_satisfy_the_check_constraints(&pre)),
        Some(unique_keys_hold_under_their_collation(&pre)),
        Some(privileges_check(&pre)),
        Some(crate::procedures::kit::checks::writable_under_read_only(
            facts.flavor == crate::server::facts::Flavor::MariaDB,
        )),
        Some(row_fits_innodb(&pre)),
        Some(primary_key(&pre)),
        Some(triggers(&pre)),
        Some(fulltext_indexes(&pre)),
        Some(row_format(&pre)),
        (strategy != Strategy::Alter).then(|| names_free(&pre)),
        (strategy == Strategy::Online).then(|| capture_names_free(&pre)),
        Some(free_disk(&pre)),
        Some(buffer_pool(&pre)),
        Some(values_strict_sql_mode_rejects(&pre)),
        Some(views(&pre)),
        (!replicas.is_empty()).then(|| {
            super::replicas::replicas_can_follow(
                info,
                replicas,
                &env.flags(),
                strategy == Strategy::Chunked,
                facts.flavor == crate::server::facts::Flavor::MariaDB,
            )
        }),
    ]
    .into_iter()
    .flatten()
    .fold(step, Step::pre)
}

/// The pre-flight's "load thresholds name status variables".
fn load_thresholds_name_status_variables(pre: &Pre) -> Check {
    let unknown: Vec<String> = [&pre.p.max_load.variable, &pre.p.critical_load.variable]
        .into_iter()
        .filter(|v| !pre.facts.status.contains_key(v.as_str()))
        .cloned()
        .collect();
    Check::new("load thresholds name status variables", move |_| {
        Ok(Verdict::check(
            unknown.is_empty(),
            if unknown.is_empty() { "known".to_string() } else { format!("{} unknown", unknown.join(", ")) },
            "variables of SHOW GLOBAL STATUS",
            format!("the server has no status variable {}: fix --max-load/--critical-load (they are case-sensitive, like Threads_running=25)", unknown.join(", ")),
        ))
    })
}

/// The pre-flight's "not marked as crashed".
fn not_marked_as_crashed(pre: &Pre) -> Check {
    let t = pre.i.clone();
    let log = pre.env.error_log.clone();
    Check::new("not marked as crashed", move |ctx| {
        let t = fresh(ctx, &t)?;
        if let Some(why) = &t.crashed {
            return Ok(Verdict::fail(
                why.clone(),
                "a table the server can open",
                if why.starts_with("ERROR 130") {
                    format!(
                        "{} cannot be opened (its index file is not a MyISAM index: {why}) and innops copies only healthy tables: back up its files, run REPAIR TABLE {} USE_FRM (it rebuilds the index from the data file), check the rows, then convert it",
                        t.display(),
                        t.qualified()
                    )
                } else {
                    format!(
                        "{} is marked as crashed and innops copies only healthy tables: back up its files, run REPAIR TABLE {}, check the rows, then convert it",
                        t.display(),
                        t.qualified()
                    )
                },
            ));
        }
        // With myisam_recover_options the server repairs a crashed table when innops first opens it: say so.
        let repaired = log
            .as_ref()
            .and_then(|(path, from)| crate::server::errorlog::read_since(path, *from).ok())
            .map(|l| repair_lines(&l.lines, &t.schema, &t.name))
            .unwrap_or_default();
        Ok(if repaired.is_empty() {
            Verdict::pass("healthy", "a table the server can open")
        } else {
            Verdict::pass(
                format!(
                    "the server repaired it automatically when innops opened it (myisam_recover_options): {}; check the rows before relying on the copy",
                    repaired.join(" / ")
                ),
                "a table the server can open",
            )
        })
    })
}

/// The pre-flight's "MyISAM table".
fn myisam_table(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("MyISAM table", move |ctx| {
        let t = fresh(ctx, &t)?;
        // A crashed table shows no engine: the check above refuses it with the repair, and this one has
        // nothing to add.
        if t.crashed.is_some() && t.engine.is_empty() {
            return Ok(Verdict::pass(
                "not readable while crashed (see the check above)",
                "MyISAM",
            ));
        }
        Ok(Verdict::check(
            t.engine.eq_ignore_ascii_case("MyISAM"),
            t.engine.clone(),
            "MyISAM",
            format!(
                "{} is {}, not MyISAM: nothing to convert",
                t.display(),
                t.engine
            ),
        ))
    })
}

/// The pre-flight's "no MERGE table over it".
fn no_merge_table_over_it(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("no MERGE table over it", move |ctx| {
        let t = fresh(ctx, &t)?;
        let unreadable = if t.merge_unreadable.is_empty() {
            String::new()
        } else {
            format!(
                "; could not read the MERGE table(s) {}: if one combines {} it will break",
                t.merge_unreadable.join(", "),
                t.display()
            )
        };
        Ok(Verdict::check(
            t.merge_parents.is_empty(),
            if t.merge_parents.is_empty() { format!("none{unreadable}") } else { t.merge_parents.join(", ") },
            "none",
            format!("the MERGE table(s) {} combine {} and would break if it became InnoDB: convert or drop the MERGE table first", t.merge_parents.join(", "), t.display()),
        ))
    })
}

/// The pre-flight's "AUTO_INCREMENT leads an index".
fn auto_increment_leads_an_index(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("AUTO_INCREMENT leads an index", move |ctx| {
        let t = fresh(ctx, &t)?;
        Ok(match schema::auto_increment_problem(&t) {
            None => Verdict::pass(
                "yes, or no AUTO_INCREMENT column",
                "first column of an index",
            ),
            Some(why) => Verdict::fail(
                "second column of a composite key",
                "first column of an index",
                why,
            ),
        })
    })
}

/// The pre-flight's "no DEFAULT from a sequence (alter path)".
fn no_default_from_a_sequence(pre: &Pre) -> Check {
    let t = pre.i.clone();
    let online = pre.strategy == Strategy::Online;
    let name = if online {
        "no DEFAULT from a sequence (online path)"
    } else {
        "no DEFAULT from a sequence (alter path)"
    };
    Check::new(name, move |ctx| {
        let t = fresh(ctx, &t)?;
        Ok(match sequence_defaults(&t) {
            None => Verdict::pass("none", "none"),
            Some(cols) => Verdict::fail(
                cols.clone(),
                "none",
                if online {
                    format!(
                            "{}: {cols} takes its DEFAULT from a sequence, and the server cannot write such a table under LOCK TABLES (ERROR 1100), which each of the online path's chunks holds: convert it with --strategy bulk or --strategy deferred",
                            t.display()
                        )
                } else {
                    format!(
                            "{}: {cols} takes its DEFAULT from a sequence, and the server cannot ALTER such a table under LOCK TABLES (ERROR 1100; with the sequence locked too MariaDB 10.11 crashes): convert it with --strategy bulk or --strategy deferred",
                            t.display()
                        )
                },
            ),
        })
    })
}

/// The pre-flight's "AUTO_INCREMENT table option".
fn auto_increment_table_option(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("AUTO_INCREMENT table option", move |ctx| {
        let t = fresh(ctx, &t)?;
        let option = t
            .definition
            .options
            .iter()
            .find(|(k, _)| k == "AUTO_INCREMENT")
            .map(|(_, v)| v.clone());
        Ok(match option {
            Some(v) if !t.columns.iter().any(|c| c.auto_increment) => Verdict::pass(
                format!("AUTO_INCREMENT={v} without an AUTO_INCREMENT column: InnoDB keeps no counter for such a table, so the converted table loses this option (no value changes)"),
                "noted",
            ),
            _ => Verdict::pass("nothing lost", "noted"),
        })
    })
}

/// The pre-flight's "column names InnoDB accepts".
fn column_names_innodb_accepts(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("column names InnoDB accepts", move |ctx| {
        let t = fresh(ctx, &t)?;
        Ok(match schema::reserved_column_problem(&t) {
            None => Verdict::pass("none reserved", "none reserved"),
            Some(why) => Verdict::fail("a name InnoDB reserves", "none reserved", why),
        })
    })
}

/// The pre-flight's "files in the datadir".
fn files_in_the_datadir(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("files in the datadir", move |ctx| {
        Ok(files_outside_datadir(&fresh(ctx, &t)?))
    })
}

/// The pre-flight's "rows satisfy the CHECK constraints".
fn rows_satisfy_the_check_constraints(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("rows satisfy the CHECK constraints", move |ctx| {
        let t = fresh(ctx, &t)?;
        check_constraint_rows(ctx, &t)
    })
}

/// The pre-flight's "UNIQUE keys hold under their collation".
fn unique_keys_hold_under_their_collation(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("UNIQUE keys hold under their collation", move |ctx| {
        let t = fresh(ctx, &t)?;
        duplicates::check_unique_keys_hold(ctx, &t)
    })
}

/// The pre-flight's "privileges".
fn privileges_check(pre: &Pre) -> Check {
    let strategy = pre.strategy;
    let t = pre.i.clone();
    Check::new("privileges", move |ctx| privileges(ctx, &t, strategy))
}

/// The pre-flight's "row fits InnoDB".
fn row_fits_innodb(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("row fits InnoDB", move |ctx| {
        let t = fresh(ctx, &t)?;
        let total: u64 = t.columns.iter().map(schema::inline_bytes).sum();
        Ok(match schema::row_size_problem(&t) {
            None => Verdict::pass(
                format!("~{total} bytes inline"),
                format!("≤ {}", schema::INNODB_MAX_ROW),
            ),
            Some(why) => Verdict::fail(
                format!("~{total} bytes inline"),
                format!("≤ {}", schema::INNODB_MAX_ROW),
                why,
            ),
        })
    })
}

/// The pre-flight's "primary key".
fn primary_key(pre: &Pre) -> Check {
    let t = pre.i.clone();
    let force_pk = pre.facts.var_on("innodb_force_primary_key");
    let online = pre.strategy == Strategy::Online;
    Check::new("primary key", move |ctx| {
        let t = fresh(ctx, &t)?;
        Ok(match (t.primary().is_some(), force_pk) {
            (false, _) if online => Verdict::fail("none", "a primary key", format!("{} has no primary key, and the online path copies, captures and compares rows by it: add a primary key first, or use --strategy bulk or deferred (writes wait from the copy to the swap)", t.display())),
            (true, _) => Verdict::pass(format!("PRIMARY KEY ({})", t.pk_columns().join(", ")), "a primary key"),
            (false, true) => Verdict::fail("none", "a primary key", format!("{} has no primary key and this server sets innodb_force_primary_key=ON: add a primary key first", t.display())),
            (false, false) => Verdict::pass("none: InnoDB will use a hidden row id, and the copy runs as one statement without chunks or resume", "a primary key"),
        })
    })
}

/// The pre-flight's "triggers".
fn triggers(pre: &Pre) -> Check {
    let strategy = pre.strategy;
    let (flavor, version) = (pre.facts.flavor, pre.facts.version);
    let t = pre.i.clone();
    Check::new("triggers", move |ctx| {
        let mut t = fresh(ctx, &t)?;
        // An interrupted online run's capture triggers are innops's own (by its record): "capture names free"
        // judges them.
        let tag = ctx.tag();
        let mut users = Vec::new();
        for name in std::mem::take(&mut t.triggers) {
            let ours = super::online::capture::trigger_names(&t.name).contains(&name)
                && own::lookup(ctx.conn()?, &tag, &t.schema, &name)?.is_some_and(|r| {
                    r.kind == super::online::capture::TRIGGER && r.of_table == t.name
                });
            if !ours {
                users.push(name);
            }
        }
        t.triggers = users;
        Ok(if t.triggers.is_empty() {
            Verdict::pass("none", "none, or --strategy alter")
        } else if strategy == Strategy::Online {
            // Several triggers per event and timing: MariaDB 10.2.3, MySQL 5.7.2.
            let many = match flavor {
                crate::server::facts::Flavor::MariaDB => {
                    version >= crate::server::facts::Version::new(10, 2, 3)
                }
                _ => version >= crate::server::facts::Version::new(5, 7, 2),
            };
            if many {
                Verdict::pass(
                    format!("{} (they keep firing beside innops's capture triggers, and move to the new table in the cut-over's locked moment)", t.triggers.join(", ")),
                    "none, or a path that keeps them",
                )
            } else {
                Verdict::fail(
                    t.triggers.join(", "),
                    "none, or a path that keeps them",
                    format!("{} has triggers ({}), and this server allows one trigger per event and timing, so innops's capture triggers cannot sit beside them: use --strategy alter, which keeps them", t.display(), t.triggers.join(", ")),
                )
            }
        } else if strategy == Strategy::Alter {
            Verdict::pass(
                format!("{} (kept by ALTER)", t.triggers.join(", ")),
                "none, or --strategy alter",
            )
        } else {
            Verdict::fail(
                t.triggers.join(", "),
                "none, or --strategy alter",
                format!("{} has triggers ({}) that the swap would move to the kept old table: use --strategy alter, which keeps them", t.display(), t.triggers.join(", ")),
            )
        })
    })
}

/// The pre-flight's "FULLTEXT indexes".
fn fulltext_indexes(pre: &Pre) -> Check {
    let t = pre.i.clone();
    let ft_myisam = pre.facts.var("ft_min_word_len").unwrap_or("4").to_string();
    let ft_innodb = pre
        .facts
        .var("innodb_ft_min_token_size")
        .unwrap_or("3")
        .to_string();
    Check::new("FULLTEXT indexes", move |ctx| {
        let t = fresh(ctx, &t)?;
        let ft: Vec<&str> = t
            .secondary()
            .filter(|x| x.is_fulltext())
            .map(|x| x.name.as_str())
            .collect();
        Ok(Verdict::pass(
            if ft.is_empty() {
                "none".to_string()
            } else {
                format!(
                    "{}: search results will change (ft_min_word_len={ft_myisam} vs innodb_ft_min_token_size={ft_innodb}, other stopwords); check the application's searches",
                    ft.join(", ")
                )
            },
            "noted",
        ))
    })
}

/// The pre-flight's "row format".
fn row_format(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("row format", move |ctx| {
        let t = fresh(ctx, &t)?;
        Ok(Verdict::pass(
            if t.explicit_fixed_format() {
                let format = t
                    .definition
                    .foreign_row_format()
                    .map(|f| f.to_ascii_uppercase())
                    .unwrap_or_else(|| "FIXED".into());
                format!("ROW_FORMAT={format}: converted with ROW_FORMAT=DEFAULT (InnoDB has no {format} format)")
            } else {
                t.row_format.clone()
            },
            "any",
        ))
    })
}

/// The pre-flight's "names free".
fn names_free(pre: &Pre) -> Check {
    let t = pre.i.clone();
    let restart = pre.p.restart;
    let flags = pre.env.flags();
    Check::new("names free", move |ctx| {
        let shadow = shadow_name(&t.name);
        let old = old_name(&t.name);
        let shadow_taken = engine_of(ctx, &t.schema, &shadow)?.is_some();
        let old_taken = engine_of(ctx, &t.schema, &old)?.is_some();
        let tag = ctx.tag();
        let kept = old_taken
            && own::lookup(ctx.conn()?, &tag, &t.schema, &old)?
                .is_some_and(|r| r.kind == own::KEPT && r.of_table == t.name);
        // A shadow another server's run made reached this one by replication: that run is live (or this
        // replica's SQL thread is still applying it), never "interrupted" here.
        let this = own::this_server(ctx.conn()?, &tag)?;
        let replicated_shadow = match shadow_taken {
            true => own::lookup(ctx.conn()?, &tag, &t.schema, &shadow)?
                .filter(|r| r.kind == own::SHADOW && r.from_elsewhere(this)),
            false => None,
        };
        Ok(if let Some(r) = replicated_shadow {
            Verdict::fail(
                format!(
                    "{shadow} is server_id {}'s copy, arriving by replication",
                    r.origin
                ),
                "free",
                r.replicated_refusal("converting it (or --restart)"),
            )
        } else if kept && swapped(ctx, &t)? {
            // Converted already (a playbook's second convert of the table): the kept copy is that
            // conversion's rollback copy, and "not converted yet" skips the work.
            Verdict::pass(
                format!("{old} is the kept copy of the conversion already done"),
                "free",
            )
        } else if kept {
            // Never advise dropping the only rollback copy: keep it under another name.
            Verdict::fail(
                    format!("{old} is innops's kept copy of an earlier conversion"),
                    "free",
                    format!("{}.{old} is the MyISAM table innops kept when it converted {} before, and the swap needs that name: keep it under another name (RENAME TABLE {} TO {}) if you need it, then convert again", t.schema, t.display(), qualified(&t.schema, &old), qualified(&t.schema, &format!("{old}_1"))),
                )
        } else if old_taken {
            Verdict::fail(
                    format!("{old} exists"),
                    "free",
                    format!("{}.{old} already exists, so the swap could not keep the MyISAM table under that name: check what it is, then rename it (RENAME TABLE {} TO …) or drop it if it is not needed", t.schema, qualified(&t.schema, &old)),
                )
        } else if shadow_taken && !restart {
            Verdict::fail(
                    format!("{shadow} exists"),
                    "free",
                    format!("{}.{shadow} is left from an interrupted conversion: continue that run with `innops resume RUN_DIR`, or start over with `{}`", t.schema, restart_command(&flags, &t)),
                )
        } else if shadow_taken {
            Verdict::pass(format!("{shadow} exists: --restart drops it"), "free")
        } else {
            Verdict::pass(format!("{shadow}, {old} free"), "free")
        })
    })
}

/// The pre-flight's "capture names free" (online path): the change log's and the triggers' names are free, or
/// innops's own from an interrupted run of this table.
fn capture_names_free(pre: &Pre) -> Check {
    let t = pre.i.clone();
    let restart = pre.p.restart;
    let flags = pre.env.flags();
    Check::new("capture names free", move |ctx| {
        let tag = ctx.tag();
        let log = super::online::capture::log_name(&t.name);
        let mut taken = Vec::new();
        if engine_of(ctx, &t.schema, &log)?.is_some() {
            taken.push(log);
        }
        let names = super::online::capture::trigger_names(&t.name);
        let triggers: Vec<String> = ctx.conn()?.exec(
            format!("SELECT {tag} TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME IN (?, ?, ?)"),
            (&t.schema, &names[0], &names[1], &names[2]),
        )?;
        taken.extend(triggers);
        let this = own::this_server(ctx.conn()?, &tag)?;
        let mut foreign = Vec::new();
        for name in &taken {
            let ours = own::lookup(ctx.conn()?, &tag, &t.schema, name)?
                .is_some_and(|r| r.of_table == t.name && !r.from_elsewhere(this));
            if !ours {
                foreign.push(name.clone());
            }
        }
        Ok(if !foreign.is_empty() {
            Verdict::fail(
                format!("{} exist, not made by innops here", foreign.join(", ")),
                "free",
                format!("{}.{} already exist with no record of innops making them for {}: the online path needs those names for its change log and triggers; check what they are, then rename or drop them", t.schema, foreign.join(", "), t.display()),
            )
        } else if !taken.is_empty() && !restart {
            Verdict::fail(
                format!("{} left from an interrupted conversion", taken.join(", ")),
                "free",
                format!("innops's triggers or change log of an interrupted online conversion of {} are in place: continue that run with `innops resume RUN_DIR`, or start over with `{}`", t.display(), restart_command(&flags, &t)),
            )
        } else if !taken.is_empty() {
            Verdict::pass(
                format!("{}: --restart drops them", taken.join(", ")),
                "free",
            )
        } else {
            Verdict::pass("free", "free")
        })
    })
}

/// The pre-flight's "free disk".
fn free_disk(pre: &Pre) -> Check {
    let t = pre.i.clone();
    let local = pre.env.target.local;
    let datadir = pre.facts.var("datadir").map(str::to_string);
    Check::new("free disk", move |ctx| {
        let t = fresh(ctx, &t)?;
        let need = (t.data_length + t.index_length) * 2;
        let Some(dir) = datadir.clone().filter(|_| local) else {
            return Ok(Verdict::pass(
                "not checked: the datadir is not on this machine",
                format!("≥ {} free", format_size(need)),
            ));
        };
        Ok(match crate::procedures::kit::checks::free_bytes(std::path::Path::new(&dir)) {
            Some(free) => Verdict::check(
                free > need,
                format!("{} free", format_size(free)),
                format!("> {} (twice the MyISAM data and indexes)", format_size(need)),
                format!("{} needs about {} and the datadir's filesystem has {} free: free space first", t.display(), format_size(need), format_size(free)),
            ),
            None => Verdict::pass(format!("not checked: {dir} is not readable here"), format!("> {}", format_size(need))),
        })
    })
}

/// The pre-flight's "buffer pool".
fn buffer_pool(pre: &Pre) -> Check {
    let t = pre.i.clone();
    let pool = pre.facts.var_u64("innodb_buffer_pool_size").unwrap_or(0);
    Check::new("buffer pool", move |ctx| {
        let t = fresh(ctx, &t)?;
        Ok(super::memory::pool_verdict(
            t.data_length + t.index_length,
            pool,
            false,
        ))
    })
}

/// The pre-flight's "values strict sql_mode rejects".
fn values_strict_sql_mode_rejects(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("values strict sql_mode rejects", move |ctx| {
        let dates: Vec<&schema::Column> = t
            .columns
            .iter()
            .filter(|c| matches!(c.data_type.as_str(), "date" | "datetime" | "timestamp"))
            .collect();
        if dates.is_empty() {
            return Ok(Verdict::pass("no date columns", "noted"));
        }
        let sums: Vec<String> = dates
            .iter()
            .map(|c| {
                format!(
                    "{} < '0001-01-01' OR DAYOFMONTH({}) = 0 OR MONTH({}) = 0",
                    crate::sql::quote_ident(&c.name),
                    crate::sql::quote_ident(&c.name),
                    crate::sql::quote_ident(&c.name)
                )
            })
            .collect();
        // In short statements: a dry run must not hold the table's writers for a whole scan.
        let scanned = scan::sums(ctx, &t, &sums)?;
        let scan::Scanned::Sums { sums: counts, .. } = &scanned else {
            return Ok(Verdict::pass(scan::how(&scanned), "noted"));
        };
        let counts = counts.clone();
        let found: Vec<String> = dates
            .iter()
            .zip(counts)
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| format!("{n} zero dates in `{}`", c.name))
            .collect();
        Ok(Verdict::pass(
            if found.is_empty() {
                format!("none ({})", scan::how(&scanned))
            } else {
                format!(
                    "{}: copied verbatim; applications in strict sql_mode cannot write such values",
                    found.join(", ")
                )
            },
            "noted",
        ))
    })
}

/// The pre-flight's "views".
fn views(pre: &Pre) -> Check {
    let t = pre.i.clone();
    Check::new("views", move |ctx| {
        let t = fresh(ctx, &t)?;
        Ok(Verdict::pass(
            if t.views.is_empty() {
                "none".to_string()
            } else {
                format!(
                    "{} read the table by name and will read the InnoDB table after the swap",
                    t.views.join(", ")
                )
            },
            "noted",
        ))
    })
}

/// Error-log lines about an automatic repair of `schema.table` (myisam_recover_options).
pub fn repair_lines(lines: &[String], schema: &str, table: &str) -> Vec<String> {
    let path = format!("'./{schema}/{table}'");
    lines
        .iter()
        .filter(|l| {
            l.contains(&path)
                && (l.contains("Checking table")
                    || l.contains("Recovering table")
                    || l.contains("marked as crashed"))
        })
        .map(|l| l.trim().to_string())
        .collect()
}

/// Columns whose DEFAULT calls a sequence (`nextval(s)`, `NEXT VALUE FOR s`, `lastval(s)`), as SHOW CREATE TABLE
/// prints them: `` `id` int(11) NOT NULL DEFAULT nextval(`x`.`s1`) ``.
pub(super) fn sequence_defaults(t: &TableInfo) -> Option<String> {
    let cols: Vec<String> = t
        .definition
        .columns
        .iter()
        .filter(|l| {
            let u = l.to_ascii_uppercase();
            u.contains(" DEFAULT ")
                && [
                    "NEXTVAL(",
                    "LASTVAL(",
                    "NEXT VALUE FOR",
                    "PREVIOUS VALUE FOR",
                    "SETVAL(",
                ]
                .iter()
                .any(|f| u.contains(f))
        })
        .map(|l| l.split(' ').next().unwrap_or(l).to_string())
        .collect();
    (!cols.is_empty()).then(|| format!("column {}", cols.join(", ")))
}

/// MyISAM's DATA DIRECTORY / INDEX DIRECTORY put the table's files elsewhere; InnoDB has no INDEX DIRECTORY
/// and `CREATE TABLE … LIKE` keeps neither, so innops refuses rather than move the data silently.
pub(super) fn files_outside_datadir(t: &TableInfo) -> Verdict {
    let mut dirs: Vec<String> = ["DATA DIRECTORY", "INDEX DIRECTORY"]
        .iter()
        .filter_map(|k| t.definition.option(k).map(|v| format!("{k}='{v}'")))
        .collect();
    // Partitions carry their own: `PARTITION p1 … DATA DIRECTORY = '/x' INDEX DIRECTORY = '/x'`.
    if let Some(parts) = t.definition.option("PARTITION") {
        let upper = parts.to_ascii_uppercase();
        for k in ["DATA DIRECTORY", "INDEX DIRECTORY"] {
            if upper.contains(k) {
                dirs.push(format!("{k} on a partition"));
            }
        }
    }
    Verdict::check(
        dirs.is_empty(),
        if dirs.is_empty() { "yes".to_string() } else { dirs.join(", ") },
        "the table's files in the datadir",
        format!(
            "{} keeps its files outside the datadir ({}), which innops cannot carry over to InnoDB: convert it by hand (CREATE TABLE … ENGINE=InnoDB DATA DIRECTORY=… and a copy), or move its files into the datadir first",
            t.display(),
            dirs.join(", ")
        ),
    )
}

/// Rows that break a CHECK constraint (possible in MyISAM: added with check_constraint_checks=0) would stop
/// the copy into InnoDB midway (ERROR 4025).
pub(super) fn check_constraint_rows(ctx: &mut Ctx, t: &TableInfo) -> anyhow::Result<Verdict> {
    let tag = ctx.tag();
    let checks: Vec<(String, String)> = ctx.conn()?.exec(
        format!("SELECT {tag} CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?"),
        (&t.schema, &t.name),
    )?;
    if checks.is_empty() {
        return Ok(Verdict::pass(
            "no CHECK constraints",
            "every row satisfies them",
        ));
    }
    // The clauses are the server's own text of the constraints, not user input. Read in short statements:
    // a dry run must not hold the table's writers for a whole scan.
    let exprs: Vec<String> = checks.iter().map(|(_, c)| format!("NOT ({c})")).collect();
    let scanned = scan::sums(ctx, t, &exprs)?;
    let scan::Scanned::Sums { sums, .. } = &scanned else {
        return Ok(Verdict::pass(
            format!("{} CHECK constraint(s), {}; InnoDB refuses a breaking row during the copy, which then stops with nothing swapped", checks.len(), scan::how(&scanned)),
            "every row satisfies them",
        ));
    };
    let broken: Vec<String> = checks
        .iter()
        .zip(sums)
        .filter(|(_, n)| **n > 0)
        .map(|((name, clause), n)| format!("{n} rows break `{name}` CHECK ({clause})"))
        .collect();
    Ok(Verdict::check(
        broken.is_empty(),
        if broken.is_empty() { format!("every row satisfies {} constraint(s) ({})", checks.len(), scan::how(&scanned)) } else { broken.join("; ") },
        "every row satisfies them",
        format!("{}: {}, and InnoDB would refuse those rows in the middle of the copy: fix or delete them first", t.display(), broken.join("; ")),
    ))
}

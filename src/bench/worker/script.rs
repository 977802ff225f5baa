//! The statements of one event, group by group, in the order the script lists them: what each group draws from
//! the thread's generator and in what order is what makes a run repeat sysbench's statements for a seed, so it
//! is read here on its own, apart from the loop that times events and handles their errors.

use mysql::Value;

use super::conn::{exec, exec_control, stmt};
use super::counts::{count, Counts};
use super::pace::Pace;
use super::Worker;
use crate::bench::wire::WireError;
use crate::bench::workloads::{self as wl, Group, GroupKind};

impl Worker<'_> {
    /// `get_table_num()`: uniform over the tables; 0-based here.
    fn table_index(&mut self) -> usize {
        (self.rng.uniform(1, self.spec.tables) - 1) as usize
    }

    /// `get_id()`: the default distribution over [1, table_size].
    fn id(&mut self) -> u32 {
        self.rng.default(&self.dist, 1, self.spec.table_size)
    }

    /// select_random_*.lua's `sb_rand(rmin, rmax)`: the default distribution over this thread's slice of the
    /// table (rlen = table_size / threads; slices keep the threads' ranges apart).
    fn slice_id(&mut self) -> u32 {
        let rlen = f64::from(self.spec.table_size) / f64::from(self.spec.threads.max(1));
        let rmin = rlen * f64::from(self.thread % self.spec.threads.max(1));
        let rmax = rmin + rlen;
        self.rng.default(&self.dist, rmin as u32, rmax as u32)
    }

    /// Send the pending bulk INSERT, if any.
    pub(super) fn flush_bulk(&mut self, c: &mut Counts) -> Result<(), WireError> {
        if self.bulk_rows == 0 {
            return Ok(());
        }
        let sql = std::mem::take(&mut self.bulk);
        self.bulk_rows = 0;
        count(self.wire.query(&sql)?, c);
        Ok(())
    }

    /// A sampled row of the table workload, drawn with the run's distribution.
    fn sample(&mut self) -> usize {
        let n = self.plan.map_or(1, |p| p.samples.len()) as u32;
        (self.rng.default(&self.dist, 1, n.max(1)) - 1) as usize
    }

    /// One event of the script. Returns at the first failing statement.
    pub(super) fn transaction(&mut self, c: &mut Counts, pace: &Pace) -> Result<(), WireError> {
        let script = std::mem::take(&mut self.script);
        let r = self.run_script(&script, c, pace);
        self.script = script;
        r
    }

    fn run_script(
        &mut self,
        script: &[Group],
        c: &mut Counts,
        pace: &Pace,
    ) -> Result<(), WireError> {
        for g in script {
            match g.kind {
                GroupKind::Begin => exec_control(&mut self.wire, &self.stmts.begin, c)?,
                GroupKind::Commit => exec_control(&mut self.wire, &self.stmts.commit, c)?,
                GroupKind::PointSelects
                | GroupKind::IndexUpdates
                | GroupKind::Deletes
                | GroupKind::SimpleRanges
                | GroupKind::SumRanges
                | GroupKind::OrderRanges
                | GroupKind::DistinctRanges => self.by_id(g.kind, g.count, c)?,
                GroupKind::NonIndexUpdates => self.non_index_updates(g.count, c)?,
                GroupKind::DeleteInserts => self.delete_inserts(g.count, c)?,
                GroupKind::RandomPoints => self.random_points(c)?,
                GroupKind::RandomRanges => self.random_ranges(c)?,
                GroupKind::BulkRow => self.bulk_row(c)?,
                GroupKind::InsertText => self.insert_text(c, pace)?,
                GroupKind::TablePoints => {
                    for _ in 0..g.count {
                        self.table_lookup(g.kind, c)?;
                    }
                }
                GroupKind::TableRange | GroupKind::TableLockingPoint | GroupKind::TableIndex(_) => {
                    self.table_lookup(g.kind, c)?
                }
                GroupKind::Sql { index, .. } => self.sql_statement(index, c)?,
            }
        }
        Ok(())
    }

    /// `count` runs of one statement on one table drawn first (oltp_delete.lua too: table uniform, then the id),
    /// each with a new `get_id()`: a point select, index update or delete takes the id, a range read the range
    /// that starts at it.
    fn by_id(&mut self, kind: GroupKind, count: u32, c: &mut Counts) -> Result<(), WireError> {
        // `id + range_size - 1`, as the INT sysbench binds (range_size 0 gives an empty range).
        let range = i64::from(self.spec.oltp.range_size) - 1;
        let one_id = matches!(
            kind,
            GroupKind::PointSelects | GroupKind::IndexUpdates | GroupKind::Deletes
        );
        let t = self.table_index();
        for _ in 0..count {
            let id = self.id();
            let ts = &self.stmts.tables[t];
            let s = stmt(match kind {
                GroupKind::PointSelects => &ts.point,
                GroupKind::IndexUpdates => &ts.index_update,
                GroupKind::Deletes => &ts.delete,
                GroupKind::SimpleRanges => &ts.simple,
                GroupKind::SumRanges => &ts.sum,
                GroupKind::OrderRanges => &ts.order,
                _ => &ts.distinct,
            });
            if one_id {
                exec(&mut self.wire, s, &[Value::from(id)], c)?;
            } else {
                let params = [Value::from(id), Value::from(i64::from(id) + range)];
                exec(&mut self.wire, s, &params, c)?;
            }
        }
        Ok(())
    }

    fn non_index_updates(&mut self, count: u32, c: &mut Counts) -> Result<(), WireError> {
        let t = self.table_index();
        for _ in 0..count {
            self.rng.fill_template(wl::C_TEMPLATE, &mut self.c_buf);
            let id = self.id();
            let params = [Value::from(self.c_buf.as_str()), Value::from(id)];
            exec(
                &mut self.wire,
                stmt(&self.stmts.tables[t].non_index_update),
                &params,
                c,
            )?;
        }
        Ok(())
    }

    fn delete_inserts(&mut self, count: u32, c: &mut Counts) -> Result<(), WireError> {
        let t = self.table_index();
        for _ in 0..count {
            let id = self.id();
            let k = self.id();
            self.rng.fill_template(wl::C_TEMPLATE, &mut self.c_buf);
            self.rng.fill_template(wl::PAD_TEMPLATE, &mut self.pad_buf);
            exec(
                &mut self.wire,
                stmt(&self.stmts.tables[t].delete),
                &[Value::from(id)],
                c,
            )?;
            let params = [
                Value::from(id),
                Value::from(k),
                Value::from(self.c_buf.as_str()),
                Value::from(self.pad_buf.as_str()),
            ];
            exec(
                &mut self.wire,
                stmt(&self.stmts.tables[t].insert),
                &params,
                c,
            )?;
        }
        Ok(())
    }

    fn random_points(&mut self, c: &mut Counts) -> Result<(), WireError> {
        let params: Vec<Value> = (0..self.spec.oltp.random_points)
            .map(|_| Value::from(self.slice_id()))
            .collect();
        exec(&mut self.wire, stmt(&self.stmts.random), &params, c)
    }

    fn random_ranges(&mut self, c: &mut Counts) -> Result<(), WireError> {
        let o = &self.spec.oltp;
        let mut params = Vec::with_capacity(2 * o.number_of_ranges as usize);
        for _ in 0..o.number_of_ranges {
            let v = self.slice_id();
            params.push(Value::from(v));
            params.push(Value::from(i64::from(v) + i64::from(o.delta)));
        }
        exec(&mut self.wire, stmt(&self.stmts.random), &params, c)
    }

    /// bulk_insert.lua: rows (n, n) into sbtest<thread + 1>, sent before the INSERT would pass sysbench's
    /// packet size.
    fn bulk_row(&mut self, c: &mut Counts) -> Result<(), WireError> {
        let row = format!("({0},{0})", self.bulk_next);
        if self.bulk_rows > 0 && self.bulk.len() + row.len() + 1 > wl::BULK_PACKET_SIZE {
            self.flush_bulk(c)?;
        }
        if self.bulk_rows == 0 {
            self.bulk = format!(
                "INSERT {} INTO sbtest{} VALUES",
                self.spec.tag,
                self.thread + 1
            );
        } else {
            self.bulk.push(',');
        }
        self.bulk.push_str(&row);
        self.bulk_rows += 1;
        self.bulk_next += 1;
        Ok(())
    }

    /// oltp_insert.lua: table, k, c, pad drawn in that order; id 0 lets AUTO_INCREMENT assign it, and with
    /// --auto_inc=off the id is sysbench.rand.unique() - 2147483648 (an SQL INT).
    fn insert_text(&mut self, c: &mut Counts, pace: &Pace) -> Result<(), WireError> {
        let t = self.rng.uniform(1, self.spec.tables);
        let k = self.id();
        self.rng.fill_template(wl::C_TEMPLATE, &mut self.c_buf);
        self.rng.fill_template(wl::PAD_TEMPLATE, &mut self.pad_buf);
        let id = if self.spec.oltp.auto_inc {
            0
        } else {
            i64::from(pace.unique()) - 2_147_483_648
        };
        let sql = format!(
            "INSERT {} INTO sbtest{t} (id, k, c, pad) VALUES ({id}, {k}, '{}', '{}')",
            self.spec.tag, self.c_buf, self.pad_buf
        );
        count(self.wire.query(&sql)?, c);
        Ok(())
    }

    /// One statement of an SQL workload: one id drawn, bound to each of its `:id`s.
    fn sql_statement(&mut self, index: usize, c: &mut Counts) -> Result<(), WireError> {
        let n = match &self.spec.workload {
            crate::bench::Workload::Sql { statements, .. } => statements[index].params,
            _ => 0,
        };
        let params = if n == 0 {
            Vec::new()
        } else {
            vec![Value::from(self.id()); n as usize]
        };
        exec(&mut self.wire, &self.stmts.sql[index], &params, c)
    }

    /// One statement of the table workload: a sampled row, and the statement of `kind` with that row's key.
    fn table_lookup(&mut self, kind: GroupKind, c: &mut Counts) -> Result<(), WireError> {
        let row = self.sample();
        let p = self.plan.expect("table plan");
        let (s, params) = match kind {
            GroupKind::TablePoints => (stmt(&self.stmts.table_point), p.point_params(row)),
            GroupKind::TableRange => (stmt(&self.stmts.table_range), p.range_params(row)),
            GroupKind::TableLockingPoint => (stmt(&self.stmts.table_lock), p.point_params(row)),
            GroupKind::TableIndex(i) => (&self.stmts.table_index[i], p.index_params(i, row)),
            _ => unreachable!("{kind:?} is not a statement of the table workload"),
        };
        exec(&mut self.wire, s, &params, c)
    }
}

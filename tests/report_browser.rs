//! report.html in a real browser: headless Chromium (Debian's `chromium`, which `make test` installs) renders
//! the report of a real run with `--bench-during`; the test reads what a person would see from the rendered
//! DOM (charts with axes and labelled units, a steps table with rows), proves from Chromium's own network log
//! that the page fetched nothing, and keeps a screenshot beside the report (`report.png`), checked to show the
//! charts' colours.
//!
//! The network proof is Chromium's `--log-net-log`: every request the page makes is in it with the page's
//! network isolation key (`file://…`); the browser's own background requests (which the flags below mostly
//! stop) have other keys. A control page that does reference a remote stylesheet, script and image is put
//! through the same check and must fail it, so the check is known to catch what it looks for.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use scraper::{Html, Selector};

use crate::common::{read_json, Sandboxed};

/// Chromium, or a failure saying how to get it.
fn chromium() -> PathBuf {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    found.unwrap_or_else(|| {
        panic!("chromium is not installed: `make deps` (or `apt-get install chromium`) installs it")
    })
}

/// Run headless Chromium on `page` with `extra` flags and a fresh profile; its stdout. Bounded: a browser that
/// does not finish in two minutes is ended and the test fails.
fn browse(page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut child = c.spawn().expect("start chromium");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "chromium failed on {}: {status}",
                page.display()
            );
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish {} in 2 minutes", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// The rendered DOM and Chromium's network log of loading `page`.
fn dom_and_netlog(page: &Path) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("net.json");
    let dom = browse(
        page,
        &[
            "--dump-dom".into(),
            format!("--log-net-log={}", log.display()),
        ],
    );
    let text = std::fs::read_to_string(&log).expect("chromium wrote its network log");
    let netlog = serde_json::from_str(&text).expect("the network log is JSON");
    (dom, netlog)
}

/// The URLs the page itself requested over the network: the requests whose initiator is the page's own
/// (opaque, "null") file origin or whose network isolation key is its file:// site.
fn page_requests(netlog: &serde_json::Value) -> Vec<String> {
    let types = netlog["constants"]["logEventTypes"].as_object().unwrap();
    let start_job = types["URL_REQUEST_START_JOB"].as_u64().unwrap();
    netlog["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter_map(|e| {
            let p = &e["params"];
            let for_page = p["initiator"] == "null"
                || p["network_isolation_key"]
                    .as_str()
                    .is_some_and(|k| k.starts_with("file://"));
            for_page.then(|| p["url"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// References in the DOM to anything but the page itself or inline data: src, href and CSS url(...).
fn remote_references(dom: &Html) -> Vec<String> {
    let mut out = Vec::new();
    for el in dom.select(&Selector::parse("*").unwrap()) {
        for (name, value) in el.value().attrs() {
            let v = value.trim();
            let is_ref = matches!(
                name,
                "src" | "href" | "xlink:href" | "srcset" | "poster" | "data"
            );
            if is_ref && !(v.starts_with('#') || v.starts_with("data:") || v.is_empty()) {
                out.push(format!("<{} {name}=\"{v}\">", el.value().name()));
            }
        }
    }
    for style in dom.select(&Selector::parse("style").unwrap()) {
        let css: String = style.text().collect();
        if css.contains("url(") || css.contains("@import") {
            out.push(format!("<style> with url()/@import: {css}"));
        }
    }
    out
}

fn texts(dom: &Html, css: &str) -> Vec<String> {
    dom.select(&Selector::parse(css).unwrap())
        .map(|e| e.text().collect::<String>())
        .collect()
}

/// A pixel of the screenshot is close to `rgb`.
fn close(px: &[u8], rgb: (u8, u8, u8)) -> bool {
    let d = |a: u8, b: u8| (i16::from(a) - i16::from(b)).abs();
    d(px[0], rgb.0) <= 24 && d(px[1], rgb.1) <= 24 && d(px[2], rgb.2) <= 24
}

#[test]
fn report_html_renders_in_chromium_with_labelled_axes_a_steps_table_and_nothing_fetched() {
    let sb = Sandboxed::new("browser");
    let mut c = sb.conn();
    for sql in [
        "CREATE DATABASE shop",
        "CREATE TABLE shop.orders (id INT PRIMARY KEY, customer VARCHAR(20), KEY (customer)) ENGINE=MyISAM",
        "INSERT INTO shop.orders SELECT seq, CONCAT('c', seq % 50) FROM shop.seq_1_to_5000",
    ] {
        c.query_drop(sql).unwrap();
    }
    drop(c);
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "convert",
        "--tables",
        "shop.orders",
        "--execute",
        "--bench-time",
        "1",
        "--bench-during",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let page = run_dir.join("report.html");
    let report = read_json(&run_dir.join("report.json"));

    let (dom_text, netlog) = dom_and_netlog(&page);
    let dom = Html::parse_document(&dom_text);
    // The impact chart: three panels whose y ticks carry their units, an x axis in seconds, one step mark per
    // step of the journal, and the series drawn.
    let impact = Selector::parse("svg.impact").unwrap();
    assert_eq!(dom.select(&impact).count(), 1, "one impact chart");
    let y_ticks = texts(&dom, "svg.impact text.y-tick");
    assert!(y_ticks.iter().any(|t| t.ends_with(" tps")), "{y_ticks:?}");
    assert!(y_ticks.iter().any(|t| t.ends_with(" ms")), "{y_ticks:?}");
    let x_ticks = texts(&dom, "svg.impact text.x-tick");
    assert!(
        x_ticks.len() >= 2 && x_ticks.iter().all(|t| t.ends_with(" s")),
        "{x_ticks:?}"
    );
    let x_label = texts(&dom, "svg.impact text.x-label").concat();
    assert!(x_label.contains("seconds"), "{x_label}");
    let titles = texts(&dom, "svg.impact text.panel-title");
    for unit in [
        "transactions per second",
        "milliseconds",
        "Errors per interval",
    ] {
        assert!(
            titles.iter().any(|t| t.contains(unit)),
            "{unit}: {titles:?}"
        );
    }
    let steps = report["during"]["steps"].as_array().unwrap().len();
    assert!(steps > 0);
    assert_eq!(texts(&dom, "svg.impact line.step-mark").len(), steps);
    assert!(
        dom.select(&Selector::parse("svg.impact polyline.tps").unwrap())
            .count()
            >= 1
    );
    assert!(!texts(&dom, "ul.legend li").is_empty(), "a legend");
    // No label over another, in the page as Chromium built it: each label is drawn to the width innops laid it
    // out with (`textLength`, kept in `data-w`), 10 px high above its baseline.
    let boxes: Vec<(String, f64, f64, f64)> = dom
        .select(&Selector::parse("svg.impact text[data-w]").unwrap())
        .map(|t| {
            let f = |a: &str| t.value().attr(a).unwrap().parse::<f64>().unwrap();
            (t.text().collect(), f("x"), f("y"), f("data-w"))
        })
        .collect();
    assert!(!boxes.is_empty(), "the steps are labelled");
    for (i, a) in boxes.iter().enumerate() {
        assert_eq!(
            dom.select(&Selector::parse("svg.impact text[data-w]").unwrap())
                .nth(i)
                .and_then(|t| t.value().attr("textLength").map(str::to_string)),
            Some(format!("{:.1}", a.3)),
            "{a:?} is drawn to its laid-out width"
        );
        for b in &boxes[i + 1..] {
            let apart = a.1 + a.3 <= b.1 || b.1 + b.3 <= a.1 || (a.2 - b.2).abs() >= 10.0;
            assert!(apart, "{a:?} overlaps {b:?}");
        }
    }
    // The write probe's errors have a swatch of their own, hatched, beside the workload's solid one.
    let legend = texts(&dom, "ul.legend li").join(" | ");
    assert!(
        legend.contains("errors of the workload (solid)")
            && legend.contains("errors of the write probe (hatched"),
        "{legend}"
    );
    assert!(
        dom.select(&Selector::parse("ul.legend pattern").unwrap())
            .count()
            == 1
    );
    // The before/after charts: a y axis with ticks in their units.
    for (label, unit) in [
        ("Transactions per second", " tps"),
        ("95th percentile latency", " ms"),
    ] {
        let sel = Selector::parse(&format!("svg[aria-label^=\"{label}\"]")).unwrap();
        let svg = dom
            .select(&sel)
            .next()
            .unwrap_or_else(|| panic!("no chart {label}"));
        assert!(svg
            .select(&Selector::parse("line.y-axis").unwrap())
            .next()
            .is_some());
        let ticks: Vec<String> = svg
            .select(&Selector::parse("text.y-tick").unwrap())
            .map(|t| t.text().collect())
            .collect();
        assert!(
            ticks.len() >= 2 && ticks.iter().all(|t| t.ends_with(unit)),
            "{label}: {ticks:?}"
        );
    }
    // The steps table: one row per step of the plan, each with its status; and the run's verdict.
    let h2 = texts(&dom, "h2");
    assert!(h2.iter().any(|h| h == "Steps"), "{h2:?}");
    let plan_steps = read_json(&run_dir.join("plan.json"))["steps"]
        .as_array()
        .unwrap()
        .len();
    let rows: Vec<Vec<String>> = dom
        .select(&Selector::parse("h2 + table tbody tr").unwrap())
        .filter(|r| r.select(&Selector::parse("td").unwrap()).count() == 7)
        .map(|r| {
            r.select(&Selector::parse("td").unwrap())
                .map(|c| c.text().collect::<String>())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), plan_steps, "{rows:?}");
    assert!(rows.iter().all(|r| r[3] == "done"), "{rows:?}");
    let status = texts(&dom, "td.ok");
    assert!(
        status.iter().any(|s| s == "done"),
        "the verdict: {status:?}"
    );

    // Nothing from the network: no reference in the DOM, no request for the page in Chromium's log, and the
    // page's policy forbids any.
    assert_eq!(remote_references(&dom), Vec::<String>::new());
    assert_eq!(page_requests(&netlog), Vec::<String>::new());
    let csp: Vec<String> = dom
        .select(&Selector::parse("meta[http-equiv=\"Content-Security-Policy\"]").unwrap())
        .filter_map(|m| m.value().attr("content").map(str::to_string))
        .collect();
    assert_eq!(csp, [innops::plan::report::html::CSP]);

    // The control: the same checks catch a page that loads a stylesheet, a script and an image from a server.
    let control = sb.root.join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><head><link rel=\"stylesheet\" href=\"http://127.0.0.1:1/s.css\"/>\
         <script src=\"http://127.0.0.1:1/x.js\"></script></head>\
         <body><img src=\"http://127.0.0.1:1/i.png\"/><p>control</p></body></html>",
    )
    .unwrap();
    let (control_dom, control_log) = dom_and_netlog(&control);
    let fetched = page_requests(&control_log);
    for url in [
        "http://127.0.0.1:1/s.css",
        "http://127.0.0.1:1/x.js",
        "http://127.0.0.1:1/i.png",
    ] {
        assert!(
            fetched.iter().any(|u| u == url),
            "{url} not seen in {fetched:?}"
        );
    }
    assert_eq!(
        remote_references(&Html::parse_document(&control_dom)).len(),
        3
    );

    // The screenshot, beside the report: the page as drawn, with the impact chart's line and the before/after
    // bars in their colours.
    let shot = run_dir.join("report.png");
    browse(
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1100,3600".into(),
        ],
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1100, 3600));
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    for (what, rgb) in [
        ("the workload's line", (0x1f, 0x5f, 0xbf)),
        ("the bar before", (0x6b, 0x8f, 0xd6)),
        ("the bar after", (0xe3, 0x9a, 0x3b)),
    ] {
        let n = pixels.iter().filter(|p| close(p, rgb)).count();
        assert!(n > 200, "{what} is not on the screenshot ({n} pixels)");
    }
}

#[test]
fn an_experiment_report_opens_with_its_verdict_table_and_draws_intervals_as_whiskers() {
    let sb = Sandboxed::new("brexp");
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--threads",
        "2",
        "--time",
        "3",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let (dom_text, netlog) = dom_and_netlog(&run_dir.join("report.html"));
    let dom = Html::parse_document(&dom_text);
    // The verdict table is the page's first table: the arms A, A′ and B, each with its verdict.
    let first = dom
        .select(&Selector::parse("table").unwrap())
        .next()
        .expect("a table");
    assert_eq!(first.value().attr("class"), Some("experiment"));
    let arms = texts(&dom, "table.experiment tbody tr td:first-child");
    assert_eq!(arms, ["A", "A′", "B"]);
    let headings = texts(&dom, "h2");
    assert_eq!(
        headings.first().map(String::as_str),
        Some("Experiment: verdicts"),
        "{headings:?}"
    );
    // A chart per measure; tps and p95 carry a whisker for A′ and B (A is the reference).
    for label in [
        "Transactions per second",
        "p95 latency",
        "p99 latency",
        "Data bytes written per transaction",
        "Redo bytes written per transaction",
        "Server CPU per transaction",
    ] {
        let sel = Selector::parse(&format!("svg[aria-label^=\"{label}\"]")).unwrap();
        assert_eq!(dom.select(&sel).count(), 1, "{label}");
    }
    let whiskers =
        Selector::parse("svg[aria-label^=\"Transactions per second\"] g.whisker").unwrap();
    assert_eq!(dom.select(&whiskers).count(), 2);
    let whiskers = Selector::parse("svg[aria-label^=\"p99 latency\"] g.whisker").unwrap();
    assert_eq!(dom.select(&whiskers).count(), 2);
    // tps over time (its own chart, apart from the bar charts above): the six measured runs (3 arms × 2 rounds), each a span in its arm's colour with a line.
    let spans = Selector::parse("svg.experiment-time g.arm-span").unwrap();
    assert_eq!(dom.select(&spans).count(), 6);
    let lines = Selector::parse("svg.experiment-time g.arm-span polyline.tps-line").unwrap();
    assert_eq!(dom.select(&lines).count(), 6);
    let span_arms: Vec<&str> = dom
        .select(&spans)
        .filter_map(|g| g.value().attr("data-arm"))
        .collect();
    for key in ["A", "A2", "B"] {
        assert_eq!(
            span_arms.iter().filter(|a| **a == key).count(),
            2,
            "{span_arms:?}"
        );
    }
    // The counters' table: one column per arm, the queue this server lacks named as not available.
    let heads = texts(&dom, "table.experiment-counters thead th");
    assert_eq!(heads, ["counter", "A", "A′", "B"]);
    let rows = texts(&dom, "table.experiment-counters tbody th");
    assert_eq!(rows.len(), 5, "{rows:?}");
    let missing = texts(&dom, "table.experiment-counters td.unavailable");
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(
        missing[0].starts_with("not available on this server"),
        "{missing:?}"
    );
    assert_eq!(remote_references(&dom), Vec::<String>::new());
    assert_eq!(page_requests(&netlog), Vec::<String>::new());
}

#[test]
fn an_experiment_over_thread_counts_shows_one_verdict_section_per_count() {
    let sb = Sandboxed::new("brexpthr");
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--workload",
        "oltp_point_select",
        "--threads",
        "1,2",
        "--time",
        "2",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let (dom_text, netlog) = dom_and_netlog(&run_dir.join("report.html"));
    let dom = Html::parse_document(&dom_text);
    let first = dom
        .select(&Selector::parse("table").unwrap())
        .next()
        .expect("a table");
    assert_eq!(first.value().attr("class"), Some("experiment"));
    let headings = texts(&dom, "h2");
    let verdicts: Vec<&String> = headings.iter().filter(|h| h.contains("verdicts")).collect();
    assert_eq!(
        verdicts,
        [
            "Experiment at 1 client threads: verdicts",
            "Experiment at 2 client threads: verdicts"
        ],
        "{headings:?}"
    );
    // Each count's table holds its own A, A′ and B; each its own tps chart and tps over time.
    let arms = texts(&dom, "table.experiment tbody tr td:first-child");
    assert_eq!(arms, ["A", "A′", "B", "A", "A′", "B"]);
    let tps = Selector::parse("svg[aria-label^=\"Transactions per second\"]").unwrap();
    assert_eq!(dom.select(&tps).count(), 2);
    let spans = Selector::parse("svg.experiment-time g.arm-span").unwrap();
    assert_eq!(dom.select(&spans).count(), 6);
    assert_eq!(remote_references(&dom), Vec::<String>::new());
    assert_eq!(page_requests(&netlog), Vec::<String>::new());
}

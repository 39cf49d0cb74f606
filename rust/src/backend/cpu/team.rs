//! The helper threads behind `parallel::team_for`. After each job a helper spins for `SPIN` before it parks, so
//! the ops of a training step hand work over to a thread that is already awake: waking a parked
//! thread costs tens of microseconds on a virtual machine, more than many kernels take (an
//! MLP 784-128-10 batch-1 step spent a third of its time in the scheduler).
//!
//! One caller at a time owns the team; any other caller, and any `team_for` nested inside an
//! item, runs its items on its own thread. Items are claimed from a shared counter, so the
//! caller does whatever no helper claims: a job finishes even if no helper ever wakes (after a
//! `fork`, say). The job lives on the caller's stack; the caller withdraws it and waits until
//! no helper is inside it before returning.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an idle helper stays awake for the next job.
const SPIN: Duration = Duration::from_micros(200);

/// One job: `f(i)` for every i < `count`, claimed through `next`.
struct Job<'a> {
    f: &'a (dyn Fn(usize) + Sync),
    count: usize,
    next: AtomicUsize,
    /// The poster's kernel settings: a helper runs the job's items under them, so a kernel that
    /// reads them inside a threaded loop (fast or reference) agrees with its caller.
    settings: crate::backend::settings::KernelSettings,
}

impl Job<'_> {
    fn work(&self) {
        crate::backend::settings::set(self.settings);
        loop {
            let i = self.next.fetch_add(1, Relaxed);
            if i >= self.count {
                break;
            }
            (self.f)(i);
        }
    }
}

struct Shared {
    /// Held by the caller that owns the team.
    busy: AtomicBool,
    /// Bumped for every job posted.
    epoch: AtomicU64,
    /// The current job (a `Job` on the owner's stack), null when none.
    job: AtomicPtr<Job<'static>>,
    /// Helpers between announcing themselves and leaving the current job.
    inside: AtomicUsize,
    /// An item panicked on a helper.
    panicked: AtomicBool,
    stop: AtomicBool,
}

pub struct Team {
    shared: Arc<Shared>,
    helpers: Vec<std::thread::JoinHandle<()>>,
    /// The threads asked for, caller included.
    threads: usize,
}

impl Team {
    /// A team of `threads` threads, the caller included (fewer helpers when the OS refuses
    /// threads).
    pub fn new(threads: usize) -> Team {
        let shared = Arc::new(Shared {
            busy: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            inside: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let helpers = (0..threads.saturating_sub(1))
            .map_while(|i| {
                let s = shared.clone();
                std::thread::Builder::new()
                    .name(format!("tlrs-team-{i}"))
                    .spawn(move || helper(&s))
                    .ok()
            })
            .collect();
        Team {
            shared,
            helpers,
            threads,
        }
    }

    /// Runs `f(i)` for every i < `count` on the caller and the helpers; `false` (nothing run)
    /// when another caller owns the team.
    pub fn run(&self, count: usize, f: &(dyn Fn(usize) + Sync)) -> bool {
        let s = &*self.shared;
        if self.helpers.is_empty() || s.busy.swap(true, Acquire) {
            return false;
        }
        let job = Job {
            f,
            count,
            next: AtomicUsize::new(0),
            settings: crate::backend::settings::current(),
        };
        // The pointer is withdrawn, and every helper out of the job, before `job` goes away.
        s.job
            .store(&job as *const Job<'_> as *mut Job<'static>, SeqCst);
        s.epoch.fetch_add(1, SeqCst);
        for h in &self.helpers {
            h.thread().unpark();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| job.work()));
        s.job.store(std::ptr::null_mut(), SeqCst);
        while s.inside.load(SeqCst) != 0 {
            std::hint::spin_loop();
        }
        let theirs = s.panicked.swap(false, SeqCst);
        s.busy.store(false, Release);
        if let Err(e) = mine {
            resume_unwind(e);
        }
        if theirs {
            panic!("a kernel panicked on a tlrs helper thread");
        }
        true
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.stop.store(true, SeqCst);
        for h in self.helpers.drain(..) {
            h.thread().unpark();
            // A helper only ever leaves by seeing `stop`; it never panics (items are caught).
            let _ = h.join();
        }
    }
}

fn helper(s: &Shared) {
    let mut last = s.epoch.load(SeqCst);
    loop {
        let mut idle_since = Instant::now();
        let mut spins = 0u32;
        let seen = loop {
            if s.stop.load(Acquire) {
                return;
            }
            let e = s.epoch.load(Acquire);
            if e != last {
                break e;
            }
            spins += 1;
            if !spins.is_multiple_of(64) {
                std::hint::spin_loop();
            } else if idle_since.elapsed() >= SPIN {
                // `unpark` after the epoch moved makes this return at once.
                std::thread::park();
                idle_since = Instant::now();
            } else {
                // Let any other runnable thread have the core (more processes than cores, as
                // with several ranks on one machine); with none it returns at once.
                std::thread::yield_now();
            }
        };
        last = seen;
        s.inside.fetch_add(1, SeqCst);
        let p = s.job.load(SeqCst);
        if !p.is_null() && s.epoch.load(SeqCst) == seen {
            // SAFETY: the job's owner withdraws the pointer and then waits for `inside` to fall
            // to zero before the job goes away; this helper counted itself in before loading
            // the pointer, and the epoch shows it is still the job it was posted as.
            let job = unsafe { &*p };
            if catch_unwind(AssertUnwindSafe(|| job.work())).is_err() {
                s.panicked.store(true, SeqCst);
            }
        }
        s.inside.fetch_sub(1, SeqCst);
    }
}

/// The process's team, resized with the thread count.
static TEAM: Mutex<Option<Arc<Team>>> = Mutex::new(None);

/// Replaces the team by one of `threads` threads; false when the OS refused some of them.
pub fn resize(threads: usize) -> bool {
    let team = Arc::new(Team::new(threads));
    let whole = team.helpers.len() + 1 == threads;
    *TEAM.lock().unwrap_or_else(|p| p.into_inner()) = Some(team);
    whole
}

/// The team for `threads` threads in all (`threads - 1` helpers), built on first use.
pub fn team(threads: usize) -> Arc<Team> {
    let mut t = TEAM.lock().unwrap_or_else(|p| p.into_inner());
    match t.as_ref() {
        Some(team) if team.threads == threads => team.clone(),
        _ => {
            let team = Arc::new(Team::new(threads));
            *t = Some(team.clone());
            team
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(team: &Team, count: usize) -> Vec<usize> {
        let hits: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
        let ran = team.run(count, &|i| {
            hits[i].fetch_add(1, SeqCst);
        });
        assert!(ran);
        hits.iter().map(|h| h.load(SeqCst)).collect()
    }

    #[test]
    fn helpers_run_items_under_the_posters_kernel_settings() {
        use crate::backend::settings::{self, KernelSettings};
        let team = Team::new(3);
        for fast in [true, false, true] {
            let want = KernelSettings {
                fast,
                ..KernelSettings::default()
            };
            let seen: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(9)).collect();
            settings::with_settings(want, || {
                assert!(team.run(64, &|i| {
                    // Long enough that the helpers take items too.
                    std::thread::sleep(Duration::from_micros(200));
                    seen[i].store(settings::current().fast as usize, SeqCst);
                }));
            });
            assert!(
                seen.iter().all(|s| s.load(SeqCst) == fast as usize),
                "fast = {fast}"
            );
        }
    }

    #[test]
    fn every_item_runs_once_job_after_job() {
        let team = Team::new(3);
        for round in 0..2000 {
            let count = round % 37;
            assert_eq!(counts(&team, count), vec![1; count], "round {round}");
            if round % 500 == 0 {
                // Let the helpers park, so the next job wakes them.
                std::thread::sleep(SPIN * 3);
            }
        }
    }

    #[test]
    fn a_second_caller_and_nested_calls_are_refused_and_run_inline() {
        let team = Arc::new(Team::new(2));
        let inner_refused = AtomicUsize::new(0);
        let ran = team.run(4, &|_| {
            if !team.run(3, &|_| {}) {
                inner_refused.fetch_add(1, SeqCst);
            }
        });
        assert!(ran);
        assert_eq!(inner_refused.load(SeqCst), 4);
        // Callers on several threads: each job's items all run, whoever owns the team.
        std::thread::scope(|s| {
            for t in 0..4 {
                let team = team.clone();
                s.spawn(move || {
                    for _ in 0..200 {
                        let hits: Vec<AtomicUsize> = (0..50).map(|_| AtomicUsize::new(0)).collect();
                        let f = |i: usize| {
                            hits[i].fetch_add(1, SeqCst);
                        };
                        if !team.run(50, &f) {
                            (0..50).for_each(f);
                        }
                        assert!(hits.iter().all(|h| h.load(SeqCst) == 1), "caller {t}");
                    }
                });
            }
        });
    }

    #[test]
    fn a_panicking_item_panics_the_caller_and_the_team_still_works() {
        let team = Team::new(2);
        for who in 0..8 {
            let r = catch_unwind(AssertUnwindSafe(|| {
                team.run(64, &|i| {
                    if i == who * 7 {
                        panic!("item {i}");
                    }
                })
            }));
            assert!(r.is_err(), "item {} should have panicked the call", who * 7);
            assert_eq!(counts(&team, 100), vec![1; 100]);
        }
    }

    #[test]
    fn a_team_without_helpers_refuses_and_resizing_replaces_it() {
        assert!(!Team::new(1).run(3, &|_| {}));
        let (a, b) = (team(3), team(2));
        assert_eq!((a.threads, b.threads), (3, 2));
        assert_eq!(counts(&b, 10), vec![1; 10]);
    }
}

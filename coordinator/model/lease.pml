/*
 * lease.pml -- Promela model of the slot lease AS coordinator/ IMPLEMENTS IT,
 * for ONE slot, checked exhaustively with Spin by run.sh (make model).
 * Adapted from ../../../shared/model/lease.pml (the model of DESIGN.md).
 * Each step names the Go function it models; keep the two in step.
 *
 * ZooKeeper: an atomic, linearizable store; every call is one step.
 *   leases/_c_<guid>-dc07-m13-<seq>  alive[w], nseq[w]: worker w's ephemeral
 *       sequential lease node (at most one per worker).  Names are renumbered
 *       1..k among existing nodes after each create/delete (canon()): only
 *       their order and equality matter, so this is exact and bounds the
 *       counter, and claims need no bound.
 *   slots/dc07-m13  zR = reserved_until_ms, zH = holder (our renumbered lease
 *       node name; 0 = none or a node that is gone), zX = the node exists.
 *       Item 7: the node is made with the root (root.go: createRoot, all
 *       1,024 slot nodes), so it exists from the start with R = 0; only an
 *       operator's hand edit (-DMAXDEL=1) deletes it, and nothing re-creates
 *       it (snowflakectl repair is not modelled).
 *   versions  only "is this copy current" matters: verc[w] is the version
 *       the worker holds (l.version / the version it read), averc[w] the one
 *       inside its queued write; every landed write makes all copies stale.
 *   fence.go: fenced  Multi(Check(lease node, -1), SetData(slot, version)):
 *       writeLeaseGone if the lease node named in the call is gone,
 *       writeConflict if the slot node is gone or the version is stale,
 *       else the write; all or nothing.
 *   session expiry  any time, any number of times: ZooKeeper deletes the
 *       node, alive[w] := 0 and go-zookeeper opens a new session by itself
 *       (conn.SessionID() changes).  A pause or a partition is an
 *       interleaving in which the worker does nothing.
 * Queued calls: go-zookeeper keeps unsent requests across a reconnect and
 *   sends them on the new session; ZooKeeper applies one client's requests in
 *   order.  aop/aval/anode/averc[w]: ONE write in the air per worker.  It
 *   lands any time later -- also after its session expired -- or is dropped.
 *   The worker gets the answer, or its own call timeout / a closed connection
 *   (coordinator.go: call; session.go: unknownOutcome -> writeUnknown) while
 *   the write stays queued and may still land, unheard.  Requests are applied
 *   in order, so the worker's next ZooKeeper call takes effect only after the
 *   queued one landed or was dropped (guard aop[w] == NONE).  Issuing IDs
 *   needs no ZooKeeper and does not wait.
 * Clock (coordinator.go: nowMs): every reading is ANY value in 0..MAXT,
 *   independent of the last one and of the other workers: skewed by any
 *   amount, stepping back by any amount.
 * Generator (snowflake/generator.go) of a tenure: state word (glast, gseq)
 *   with the floor bit gflr and the seal (holding[w] = 0); ceiling ceil[w]
 *   (gceil[w] under M_EARLYCEIL).  Sequence 0..MAXSEQ.
 * ASSERTION (at every ID issued): no two IDs of the slot share a
 *   (timestamp, sequence) -- ids is the set of every ID ever issued.
 *
 * Compile-time switches (run.sh):
 *   NW MAXT H MAXSEQ  workers, clock 0..MAXT, horizon, sequence 0..MAXSEQ
 *   MAXDEL            operator deletions of the slot node (default 0)
 *   SPREAD            a new millisecond starts at any sequence 0..MAXSEQ
 *                     (--sequence-start spread; without it, at 0)
 *   M_BARESET   mutant: renew and release write with a bare Set(slot, -1)
 *               (no Check of the lease node, no version)
 *   M_NOWAIT    mutant: reserve neither waits past R nor keeps the claim
 *               write above it: R := now + H from any clock reading
 *   V_NOWAITONLY variant: reserve skips waitPast only (floor and
 *               max(now + H, R) kept) -- holds: the wait is not what
 *               carries safety in this code
 *   M_EARLYCEIL mutant: renew raises the generator's ceiling when it sends
 *               the write, before ZooKeeper confirms it
 *   M_RELBELOW  mutant: release writes R := last issued (0 when this
 *               tenure issued none) instead of max(Seal(), l.floor)
 *   M_NOFLOOR   mutant: the generator is made with Floor 0 (the wait past R
 *               stays)
 *   M_CREATE0   mutant (the code before item 7): a missing slot node is
 *               re-created inside the fence at floor 0; needs MAXDEL >= 1
 *   V_VERSIONSET variant: renew and release are a versioned bare
 *               Set(slot, version), no Check -- holds (the version fences)
 *   HS          the standby horizon (default 1; issue 15): at any renew a
 *               holder may find a standby waiting and renew with HS; a
 *               reservation above max(now + HS, l.floor) is then LOWERED:
 *               gen.LowerCeiling first (never below glast), then the
 *               fenced write of that value.  NOSHORTEN leaves the step out.
 *   M_WRITEFIRST mutant: the shortening writes the lower value first and
 *               lowers the generator's ceiling only once ZooKeeper
 *               confirmed it
 *   M_LOGICALCEIL mutant: the logical clock (issue 16) passes the ceiling:
 *               it takes last+1 without checking it against the ceiling
 *   resume      (issue 42, resume.go) a worker that lost its lease with its
 *               session or node (lost(expired | node_gone)) keeps rfl[w] =
 *               max(last issued, l.floor); while the slot node still holds
 *               its last confirmed write (the code compares holder and
 *               version; here: verc[w] at the loss, and no write landed
 *               since, rv[w]) its next claim's floor is rfl[w], not R
 *   M_RESUMEANY mutant: the resume skips that check: a worker resumes
 *               from its own last ID a slot someone else held meanwhile
 *
 * The edges (issue 30), -DEDGES: what operators and disasters do around
 * the lease.  Clocks are then BOUNDED: ZooKeeper's time zt (the leader's
 * mtime) moves on by itself, and every clock reading of a worker or an
 * operator lies within zt-K..zt+K (K = the root's max_skew, the horizon H
 * its max_horizon: tree/init.go's bound, which workers above it refuse).  Each
 * of these happens at most once, at any moment, while anything else goes on
 * (zombies keep issuing up to their ceilings until they notice):
 *   E_REMAKE   the ensemble loses its data; snowflakectl init makes the
 *              root again (tree/init.go: fillRoot): zR := zt + H + K, every
 *              lease node gone, every session with it
 *   E_EMPTY    an operator deletes the slot node and makes it again by hand
 *              with no data (tree/layout.go: DecodeSlot): damage, never floor 0
 *   E_REPAIR   an operator deletes the slot node (or the root with it);
 *              snowflakectl repair makes it again (tree/slotnodes.go: repair):
 *              zR := max(zt, clock) + H + K, H + K the bound the fleet was
 *              made with, which every slot record carries (bound_ms) and
 *              the registry keeps when the root is gone (#37 item 3): the
 *              bound is per root, never a default
 *   E_RESTORE  a backup of the slot node (zR, zX) taken at any moment is
 *              restored later, every lease node and session gone; workers
 *              that saw it (rollback.go, refusal.go) claim nothing until
 *              snowflakectl recover (tree/recover.go) raised zR to
 *              max(zt, clock) + H + K, then wrote its marker: two steps,
 *              anything else may happen between them.  The workers' access
 *              is closed from the restore to the marker (the runbook's
 *              procedure), which is also what a worker that sees the
 *              rollback does by itself
 *   X_MAYMISS  (want fail, not a mutant) the code's detector as it is: it
 *              may miss (a worker started after the restore, one whose
 *              evidence others' creates hid): each worker sees the restore
 *              or not, and one that does not claims from the restored tree
 *              without the procedure.  The trail is why the runbook's
 *              shut-out is the one way through a restore
 *   mutants:  M_INITMTIME  init reserves to the make's time only (zt)
 *             M_EMPTYFLOOR0 an empty slot node reads as floor 0
 *             M_REPAIRLOW  repair reserves below the horizon (clock + 1)
 *             M_REPAIRDEFAULT repair records the default bound, one below
 *                          the fleet's (a root made with init --max-horizon
 *                          60s, repaired with 40s: the code before #37)
 *             M_RECOVERMISS recover leaves this slot behind
 *             M_MARKERFIRST recover writes its marker before it raises
 */

#ifndef NW
#define NW 2
#endif
#ifndef MAXT
#define MAXT 5
#endif
#ifndef H
#define H 2
#endif
#ifndef MAXSEQ
#define MAXSEQ 1
#endif
#ifndef MAXDEL
#define MAXDEL 0
#endif
#ifndef HS
#define HS 1
#endif
#ifndef K
#define K 1
#endif

/* queued write kinds */
#define NONE     0
#define CLAIMW   1
#define RENEW    2
#define RELEASE  3
#define CREATEW  4
/* answers: writeResult in fence.go */
#define OK       1
#define GONE     2     /* writeLeaseGone */
#define CONFL    3     /* writeConflict */
#define UNKN     4     /* writeUnknown */
/* worker states */
#define LIST      0    /* claim.go: runClaiming, list + freeSlots */
#define CREATE    1    /* claim.go: createLease */
#define CHECK     2    /* claim.go: runClaiming, the listing after our create */
#define READ      3    /* reserve.go: reserve, readSlot */
#define WAIT      4    /* reserve.go: reserve, waitPast + writeSlot */
#define CLAIMING  5    /* reserve.go: reserve, the answer of writeSlot */
#define HOLD      6    /* hold.go: runServing */
#define RENEWING  7    /* hold.go: renew */
#define RELEASING 8    /* release.go: release */

#define MAX(a,b) ((a) > (b) -> (a) : (b))
#ifdef EDGES
#define ZECLEAR zE = 0
#else
#define ZECLEAR skip
#endif
#if defined(EDGES) && !defined(M_EMPTYFLOOR0)
#define EMPTYOK (!zE)               /* an empty node is damage */
#else
#define EMPTYOK 1                   /* M_EMPTYFLOOR0: it reads as R = 0 */
#endif
#if defined(EDGES) && defined(E_RESTORE) && defined(X_MAYMISS)
#define ROLLED (rolled && sees[w])
#elif defined(EDGES) && defined(E_RESTORE)
#define ROLLED rolled
#else
#define ROLLED 0
#endif
#define MIN(a,b) ((a) < (b) -> (a) : (b))

/* ---------------- ZooKeeper ---------------- */
byte zR;                 /* slots/..: reserved_until_ms */
byte zH;                 /* slots/..: holder */
bool zX = 1;             /* slots/.. exists: made with the root (item 7) */
byte ndel;               /* operator deletions so far */
#ifdef EDGES
byte zt;                 /* ZooKeeper's time (the leader's clock) */
bool zE;                 /* slots/..: made by hand, no reservation */
bool nedge;              /* the one edge event has happened */
bool bk;                 /* E_RESTORE: a backup was taken */
byte bR;                 /* the backup of the slot node's reservation (it
                            exists, not emptied: one edge per run) */
bool rolled;             /* restored, recover's marker not yet written */
byte recov;              /* recover's steps done: 0, 1 (the first), 2 */
#ifdef X_MAYMISS
bool sees[NW];           /* the worker's detector caught the restore */
#endif
#ifdef M_REPAIRDEFAULT
#define RB (H - 1)               /* the default bound, below the fleet's */
#else
#define RB H                     /* the root's bound, kept by every record */
#endif
#ifdef M_RECOVERMISS
#define RECOVER_RAISE() printf("OP : snowflakectl recover leaves the slot behind (R=%d)\n", zR)
#else
#define RECOVER_RAISE() zR = MAX(zR, MIN(MAX(gt_, zt) + H + K, MAXT)); invalidate_versions(); \
       printf("OP : snowflakectl recover: slot reserved until %d\n", zR)
#endif
#define CLO MAX(zt, K) - K            /* a clock reading's range */
#define CHI MIN(zt + K, MAXT)
#else
#define CLO 0
#define CHI MAXT
#endif
byte seqctr;             /* leases/: the sequential counter */
bool alive[NW];          /* worker w's lease node exists */
byte nseq[NW];           /* its name (0 = none) */
bool verc[NW];           /* worker's copy of the slot version is current */
bool rv[NW];             /* resume.go: our lost lease's last write is still
                            the slot node's (holder and version) */
byte rfl[NW];            /* resume.go: lostLease.floor */

/* ---------------- the slot's history (#41, tree/history.go) ----------
   Every fenced write records the writer's tenure in the slot node: the
   floor it claimed from (afl: the floor its queued claim write carries)
   and, as its end, the reservation that write confirms (tend: the value
   of the worker's last write that landed).  The record is what an audit
   places IDs by, so the model checks it is true: a claim write records a
   floor at or above every other tenure's end (the tenures are disjoint),
   a renew or release that lands is at or above all its tenure issued, and
   every ID lies at or below its tenure's recorded end.  TENURE turns the
   checks on (they double the states: run.sh runs them on their own).
   M_TENUREMAX mutant: a tenure records the highest ceiling it confirmed
   rather than its last; a release (or the shortening) lowers the
   reservation the next holder starts from below it. */
#ifdef TENURE
#ifdef M_TENUREMAX
#define TENURE_END(w) \
  if \
  :: aop[w] == CLAIMW || aop[w] == CREATEW -> tend[w] = aval[w] \
  :: else -> tend[w] = MAX(tend[w], aval[w]) \
  fi
#else
#define TENURE_END(w) tend[w] = aval[w]
#endif
byte tend[NW];
byte afl[NW];
#define TENURE_SEND(w) if :: op == CLAIMW || op == CREATEW -> afl[w] = rf[w] :: else -> skip fi
#define TENURE_LAND(w) \
  if \
  :: aop[w] == CLAIMW || aop[w] == CREATEW -> \
     gi_ = 0; \
     do \
     :: gi_ < NW -> assert(gi_ == w || afl[w] >= tend[gi_]); gi_++ \
     :: else -> break \
     od; gi_ = 0 \
  :: else -> assert(gflr[w] || aval[w] >= glast[w]) \
  fi; \
  TENURE_END(w)
#define TENURE_ISSUE(w) assert(gt_ <= tend[w])
#else
#define TENURE_SEND(w) skip
#define TENURE_LAND(w) skip
#define TENURE_ISSUE(w) skip
#endif

/* ---------------- the one queued write per worker ---------------- */
byte aop[NW];
byte aval[NW];           /* reserved_until it writes */
byte anode[NW];          /* lease node it checks and names as holder */
bool averc[NW];          /* its expected version is current */
bool await[NW];          /* the worker still waits for the answer */
byte res[NW];            /* answer delivered to the worker */

/* ---------------- workers (the lease struct) ---------------- */
byte pc[NW];
byte rf[NW];             /* l.floor: R found by reserve */
byte sval[NW];           /* target of the write it waits on */
byte ceil[NW];           /* l.ceiling = the generator's ceiling */
bool attempted[NW];      /* reserve: a write of ours may have landed */
bool rat[NW];            /* release: second attempt used */
bool lowering[NW];       /* M_WRITEFIRST: the write in the air lowers */
/* generator */
bool holding[NW];        /* a generator exists and is not sealed */
byte glast[NW];          /* state word: timestamp */
byte gseq[NW];           /* state word: sequence */
bool gflr[NW];           /* state word: floor bit (nothing issued yet) */
#ifdef M_EARLYCEIL
byte gceil[NW];          /* the generator's ceiling, raised early */
#define GCEIL(w) gceil[w]
#else
#define GCEIL(w) ceil[w]
#endif

/* ---------------- ghost: every ID issued, bit ts*(MAXSEQ+1)+seq ------- */
#if (MAXT + 1) * (MAXSEQ + 1) <= 8
#define MASK byte
#elif (MAXT + 1) * (MAXSEQ + 1) <= 15
#define MASK short
#else
#define MASK int
#endif
MASK ids;
#define IDBIT(t,s) (1 << ((t) * (MAXSEQ + 1) + (s)))

byte gi_, gj_, gk_, gr_, gt_;
byte nr_[NW];            /* scratch: 0 between steps */

#if NW == 2
#define NOLIVE        (!alive[0] && !alive[1])
#define LOWER(w)      ((w != 0 && alive[0] && nseq[0] < nseq[w]) || \
                       (w != 1 && alive[1] && nseq[1] < nseq[w]))
#else
#define NOLIVE        (!alive[0] && !alive[1] && !alive[2])
#define LOWER(w)      ((w != 0 && alive[0] && nseq[0] < nseq[w]) || \
                       (w != 1 && alive[1] && nseq[1] < nseq[w]) || \
                       (w != 2 && alive[2] && nseq[2] < nseq[w]))
#endif

#ifdef M_NOFLOOR
#define GENFLOOR(w) 0
#else
#define GENFLOOR(w) rf[w]
#endif

/* release.go: release -- target := max(gen.Seal(), l.floor); Seal returns
   the last issued timestamp, or the floor when none was issued */
#ifdef M_RELBELOW
#define RELVAL(w) (gflr[w] -> 0 : glast[w])
#else
#define RELVAL(w) MAX(glast[w], rf[w])
#endif

#ifdef M_RESUMEANY
#define UNRESUME(w) skip
#else
#define UNRESUME(w) rv[w] = 0; rfl[w] = 0
#endif

inline invalidate_versions() {
  gi_ = 0;
  do
  :: gi_ < NW -> verc[gi_] = 0; averc[gi_] = 0; UNRESUME(gi_); gi_++
  :: else -> break
  od;
  gi_ = 0
}

/* queue a write; the worker waits for its answer */
inline send(w, op, val) {
  aop[w] = op; aval[w] = val; anode[w] = nseq[w]; averc[w] = verc[w];
  await[w] = 1; sval[w] = val;
  TENURE_SEND(w)
}

inline clear_air(w) {
  aop[w] = NONE; aval[w] = 0; anode[w] = 0; averc[w] = 0
}

#if defined(M_BARESET)
#define BARE(w) (aop[w] == RENEW || aop[w] == RELEASE)
#define BAREVER(w) true             /* Set(slot, data, -1) */
#elif defined(V_VERSIONSET)
#define BARE(w) (aop[w] == RENEW || aop[w] == RELEASE)
#define BAREVER(w) averc[w]         /* Set(slot, data, version) */
#else
#define BARE(w) false
#define BAREVER(w) false
#endif
#define NODEOK(w) (alive[w] && nseq[w] == anode[w])

inline popname(op) {
  if
  :: op == CLAIMW -> printf("claim Multi")
  :: op == RENEW && BARE(w) -> printf("renew BARE Set")
  :: op == RENEW && !BARE(w) -> printf("renew Multi")
  :: op == RELEASE && BARE(w) -> printf("release BARE Set")
  :: op == RELEASE && !BARE(w) -> printf("release Multi")
  :: op == CREATEW -> printf("Multi(Check, Create slot)")
  fi
}

/* fence.go: fenced -- ZooKeeper applies w's queued write, maybe long after
   it was sent, maybe on a later session of w's client */
inline land(w) {
  if
  :: BARE(w) && zX && BAREVER(w) -> gr_ = OK
  :: BARE(w) && !(zX && BAREVER(w)) -> gr_ = CONFL
  :: !BARE(w) && !NODEOK(w) -> gr_ = GONE               /* resp[0] ErrNoNode */
  :: !BARE(w) && NODEOK(w) && aop[w] == CREATEW && zX -> gr_ = CONFL   /* ErrNodeExists */
  :: !BARE(w) && NODEOK(w) && aop[w] != CREATEW && !(zX && averc[w]) -> gr_ = CONFL
  :: !BARE(w) && NODEOK(w) && (aop[w] == CREATEW -> !zX : (zX && averc[w])) -> gr_ = OK
  fi;
  printf("ZK : W%d's queued ", w); popname(aop[w]);
  printf(" (R=%d, lease n%d) lands: ", aval[w], anode[w]);
  if
  :: gr_ == OK -> printf("OK")
  :: gr_ == GONE -> printf("ErrNoNode on the lease node (writeLeaseGone)")
  :: gr_ == CONFL -> printf("slot node changed or gone (writeConflict)")
  fi;
  if :: await[w] -> printf("\n") :: else -> printf(", unheard\n") fi;
  if
  :: gr_ == OK -> TENURE_LAND(w); zR = aval[w]; zH = anode[w]; zX = 1; ZECLEAR; invalidate_versions()
  :: else -> skip
  fi;
  if
  :: await[w] -> res[w] = gr_; await[w] = 0;
     if :: gr_ == OK -> verc[w] = 1 :: else -> skip fi
  :: else -> skip
  fi;
  clear_air(w); gr_ = 0
}

/* w's lease node is deleted (or forgotten, when already gone).  A holder
   name that names no node any more is only ever compared with fresh names,
   so it becomes 0 (fewer states, same runs). */
inline drop_node(w) {
  if :: zH != 0 && zH == nseq[w] -> zH = 0 :: else -> skip fi;
  alive[w] = 0; nseq[w] = 0;
  canon()
}

/* renumber the names in use 1..k in order (see the header) */
inline canon() {
  gi_ = 0;
  do
  :: gi_ < NW ->
     if
     :: nseq[gi_] != 0 ->
        nr_[gi_] = 1; gj_ = 0;
        do
        :: gj_ < NW ->
           if :: nseq[gj_] != 0 && nseq[gj_] < nseq[gi_] -> nr_[gi_]++ :: else -> skip fi;
           gj_++
        :: else -> break
        od;
        gj_ = 0
     :: else -> nr_[gi_] = 0
     fi;
     gi_++
  :: else -> break
  od;
  gi_ = 0; gk_ = 0; seqctr = 0;
  do
  :: gi_ < NW ->
     if :: zH != 0 && zH == nseq[gi_] -> gk_ = nr_[gi_] :: else -> skip fi;
     if :: anode[gi_] != 0 -> anode[gi_] = nr_[gi_] :: else -> skip fi;
     nseq[gi_] = nr_[gi_];
     if :: nr_[gi_] > seqctr -> seqctr = nr_[gi_] :: else -> skip fi;
     nr_[gi_] = 0; gi_++
  :: else -> break
  od;
  zH = gk_; gk_ = 0; gi_ = 0
}

/* gt_ := any value in lo..hi (one step; blocks if lo > hi) */
#define PICK(lo,hi) if \
  :: (lo) <= 0 && 0 <= (hi) -> gt_ = 0 \
  :: (lo) <= 1 && 1 <= (hi) -> gt_ = 1 \
  :: (lo) <= 2 && 2 <= (hi) -> gt_ = 2 \
  :: (lo) <= 3 && 3 <= (hi) -> gt_ = 3 \
  :: (lo) <= 4 && 4 <= (hi) -> gt_ = 4 \
  :: (lo) <= 5 && 5 <= (hi) -> gt_ = 5 \
  :: (lo) <= 6 && 6 <= (hi) -> gt_ = 6 \
  :: (lo) <= 7 && 7 <= (hi) -> gt_ = 7 \
  :: (lo) <= 8 && 8 <= (hi) -> gt_ = 8 \
  :: (lo) <= 9 && 9 <= (hi) -> gt_ = 9 \
  :: (lo) <= 10 && 10 <= (hi) -> gt_ = 10 \
  :: (lo) <= 11 && 11 <= (hi) -> gt_ = 11 \
  :: (lo) <= 12 && 12 <= (hi) -> gt_ = 12 \
  fi

/* hold.go: runServing -> snowflake.NewGenerator(Floor: l.floor, Ceiling:
   l.ceiling): the state word starts at floor<<12 | MaxSequence | floorBit */
inline start_tenure(w) {
  rv[w] = 0; rfl[w] = 0;    /* claim.go: claimed, s.resume = nil */
  holding[w] = 1; glast[w] = GENFLOOR(w); gseq[w] = MAXSEQ; gflr[w] = 1;
#ifdef M_EARLYCEIL
  gceil[w] = ceil[w];
#endif
  printf("W%d : TENURE n%d starts: generator floor %d, ceiling %d\n", w, nseq[w], GENFLOOR(w), ceil[w])
}

/* snowflake/generator.go: reserve -- one ID (gt_, gk_) */
inline issue(w) {
  printf("W%d : issues ID (ts %d, seq %d)  [lease n%d, ceiling %d]\n", w, gt_, gk_, nseq[w], GCEIL(w));
  TENURE_ISSUE(w);
  assert((ids & IDBIT(gt_, gk_)) == 0);      /* no (ts, seq) issued twice */
  ids = ids | IDBIT(gt_, gk_);
  glast[w] = gt_; gseq[w] = gk_; gflr[w] = 0;
  gt_ = 0; gk_ = 0
}

/* the per-tenure state a new claim starts without */
inline forget(w) {
  verc[w] = 0; rf[w] = 0; sval[w] = 0; ceil[w] = 0; attempted[w] = 0; rat[w] = 0; lowering[w] = 0;
  glast[w] = 0; gseq[w] = 0; gflr[w] = 0;
#ifdef M_EARLYCEIL
  gceil[w] = 0;
#endif
  skip
}

/* hold.go: lost -- gen.Seal() first; the node is deleted only when the slot
   was taken (writeConflict); back to claim */
inline lose(w, del) {
  holding[w] = 0;
  /* resume.go: keepLost -- lost with the session or the node, our write
     on top (verc), we may resume from max(last issued, l.floor) */
  if
#ifdef M_RESUMEANY
  :: !del -> rv[w] = 1; rfl[w] = MAX(glast[w], rf[w])
#else
  :: !del && verc[w] -> rv[w] = 1; rfl[w] = MAX(glast[w], rf[w])
#endif
  :: else -> rv[w] = 0; rfl[w] = 0
  fi;
  if :: del -> drop_node(w) :: else -> skip fi;
  forget(w); pc[w] = LIST
}

/* reserve.go: reserve gives the lease up -- deleteLease, runClaiming picks again */
inline giveup(w) {
  drop_node(w); forget(w); pc[w] = LIST
}

proctype Worker(byte w)
{
end:
  do
  /* ---------------- environment acting on w ---------------- */
  :: d_step { alive[w] ->                          /* session expiry */
       printf("ZK : W%d's session expires: lease node n%d deleted; go-zookeeper opens a new session\n", w, nseq[w]);
       alive[w] = 0 }
  :: d_step { aop[w] != NONE -> land(w) }          /* queued write applied */
  :: d_step { aop[w] != NONE ->                    /* queued write dropped */
       printf("ZK : W%d's queued ", w); popname(aop[w]); printf(" is dropped, never applied\n");
       if :: await[w] -> res[w] = UNKN; await[w] = 0 :: else -> skip fi;
       clear_air(w) }
  :: d_step { await[w] ->                          /* coordinator.go: call times out */
       printf("W%d : no answer (call timeout / connection closed): outcome unknown\n", w);
       res[w] = UNKN; await[w] = 0 }               /* the write stays queued */
#if MAXDEL > 0
  :: d_step { w == 0 && zX && ndel < MAXDEL ->     /* hand edit in zkCli */
       printf("OP : deleteall slots/dc07-m13\n");
       zX = 0; zR = 0; zH = 0; ndel++; invalidate_versions() }
#endif

#ifdef EDGES
  :: d_step { w == 0 && zt < MAXT -> zt++ }        /* time passes */
#ifdef E_REMAKE
  :: d_step { w == 0 && !nedge ->                  /* data lost; init */
       nedge = 1; zX = 1; zE = 0; zH = 0;
#ifdef M_INITMTIME
       zR = zt;
#else
       zR = MIN(zt + H + K, MAXT);
#endif
       printf("OP : the ensemble lost its data; snowflakectl init makes the root, slots reserved until %d\n", zR);
       gi_ = 0;
       do
       :: gi_ < NW -> alive[gi_] = 0; nseq[gi_] = 0; gi_++
       :: else -> break
       od;
       gi_ = 0; canon(); invalidate_versions() }
#endif
#ifdef E_EMPTY
  :: d_step { w == 0 && !nedge ->                  /* zkCli create, no data */
       nedge = 1; zX = 1; zE = 1; zR = 0; zH = 0; invalidate_versions();
       printf("OP : delete slots/dc07-m13 and create it again by hand, empty\n") }
#endif
#ifdef E_REPAIR
  :: atomic { w == 0 && !nedge -> PICK(CLO, CHI); d_step {   /* delete; repair */
       nedge = 1; zX = 1; zE = 0; zH = 0; invalidate_versions();
#ifdef M_REPAIRLOW
       zR = MIN(gt_ + 1, MAXT);
#else
       zR = MIN(MAX(gt_, zt) + RB + K, MAXT);
#endif
       printf("OP : delete slots/dc07-m13; snowflakectl repair makes it, reserved until %d\n", zR);
       gt_ = 0 } }
#endif
#ifdef E_RESTORE
  :: d_step { w == 0 && !bk ->                     /* a backup */
       bk = 1; bR = zR;
       printf("OP : backup of ZooKeeper (slot reserved until %d)\n", bR) }
  :: d_step { w == 0 && bk && !nedge ->            /* restore it */
       nedge = 1; rolled = 1; zR = bR; zH = 0;
       printf("OP : ZooKeeper restored from the backup: slot reserved until %d again\n", zR);
       gi_ = 0;
       do
       :: gi_ < NW -> alive[gi_] = 0; nseq[gi_] = 0; gi_++
       :: else -> break
       od;
       gi_ = 0; canon(); invalidate_versions() }
  /* snowflakectl recover, in the code's two steps (tree/recover.go):
     raise every slot node (raiseSlot), then write the marker into the
     root, which lets the workers that saw the rollback claim again
     (rollback.go: runWaitingRecover).  M_MARKERFIRST: the marker first. */
  :: atomic { w == 0 && rolled && recov == 0 -> PICK(CLO, CHI); d_step {
       recov = 1;
#ifdef M_MARKERFIRST
       rolled = 0;
       printf("OP : snowflakectl recover writes its marker (workers may claim)\n");
#else
       RECOVER_RAISE();
#endif
       gt_ = 0 } }
  :: atomic { w == 0 && recov == 1 -> PICK(CLO, CHI); d_step {
       recov = 2;
#ifdef M_MARKERFIRST
       RECOVER_RAISE();
#else
       rolled = 0;
       printf("OP : snowflakectl recover writes its marker (workers may claim)\n");
#endif
       gt_ = 0 } }
#ifdef X_MAYMISS
  /* the detector (rollback.go, refusal.go, resume.go) catches the restore
     at some moment, or never: until then the worker claims as usual */
  :: d_step { rolled && !sees[w] -> sees[w] = 1;
       printf("W%d : sees the ensemble went back: claims nothing until recover\n", w) }
#endif
#endif
#endif

  /* ---------------- claim ---------------- */
  /* claim.go: runClaiming -- list leases/, freeSlots: the slot is free when no
     lease node names it (else standby); after a rollback it sees, nothing
     until recover (rollback.go: runWaitingRecover) */
  :: d_step { pc[w] == LIST && aop[w] == NONE && NOLIVE && !ROLLED ->
       printf("W%d : ls leases/: slot free\n", w); pc[w] = CREATE }
  /* claim.go: createLease -- protected ephemeral sequential create on our
     current session, Exists confirms ephemeralOwner; after a rollback the
     node's sequence is at or below one seen before: deleted, and nothing
     until recover (rollback.go) -- the create waits, which is the same */
  :: d_step { pc[w] == CREATE && aop[w] == NONE && !ROLLED ->
       seqctr++; nseq[w] = seqctr; alive[w] = 1;
       canon(); pc[w] = CHECK;
       printf("W%d : create lease node n%d\n", w, nseq[w]) }
  /* claim.go: runClaiming -- list again: lowest sequence of the slot wins */
  :: d_step { pc[w] == CHECK && aop[w] == NONE ->
       if
       :: LOWER(w) -> printf("W%d : a lower node holds the slot: delete n%d\n", w, nseq[w]); giveup(w)
       :: else -> printf("W%d : n%d is the lowest node of the slot\n", w, nseq[w]); pc[w] = READ
       fi }
  /* reserve.go: reserve -- SessionID check, then fence.go: readSlot */
  :: d_step { pc[w] == READ && aop[w] == NONE ->
       if
       :: !alive[w] -> printf("W%d : session changed during claim: give up\n", w);
            forget(w); pc[w] = LIST           /* the node went with the session */
       :: alive[w] && zX && zH != 0 && zH == nseq[w] ->
            /* our unanswered write landed: adopt its version and R */
            verc[w] = 1; ceil[w] = zR; attempted[w] = 0;
            printf("W%d : read slot: holder is our n%d: adopt R=%d\n", w, zH, zR);
            start_tenure(w); pc[w] = HOLD
       :: alive[w] && zX && !(zH != 0 && zH == nseq[w]) && attempted[w] && !verc[w] ->
            printf("W%d : slot written by another holder during our claim: give up\n", w);
            giveup(w)
       :: alive[w] && zX && !(zH != 0 && zH == nseq[w]) && !(attempted[w] && !verc[w]) && EMPTYOK && !rv[w] ->
            rf[w] = zR; verc[w] = 1;
            printf("W%d : read slot: R=%d, l.floor := %d\n", w, zR, zR);
            pc[w] = WAIT
       :: alive[w] && zX && !(zH != 0 && zH == nseq[w]) && !(attempted[w] && !verc[w]) && EMPTYOK && rv[w] ->
            /* resume.go: floorOf -- the slot node still holds our lost
               lease's last write: resume from what we issued */
            rf[w] = rfl[w]; verc[w] = 1;
            printf("W%d : read slot: R=%d is our lost lease's write: resume, l.floor := %d\n", w, zR, rfl[w]);
            pc[w] = WAIT
#if defined(EDGES) && !defined(M_EMPTYFLOOR0)
       :: alive[w] && zX && zE && !(zH != 0 && zH == nseq[w]) ->
            /* tree/layout.go: DecodeSlot -- no reservation: damage, let go */
            printf("W%d : slot node holds no reservation: damage, refuse the slot\n", w);
            giveup(w)
#endif
#ifdef M_CREATE0
       :: alive[w] && !zX && !attempted[w] ->
            /* the code before item 7: first use, Multi(Check, Create) at floor 0 */
            printf("W%d : slot node missing: first use, floor 0\n", w);
            rf[w] = 0; verc[w] = 0; pc[w] = WAIT
       :: alive[w] && !zX && attempted[w] -> giveup(w)
#else
       :: alive[w] && !zX ->
            /* item 7: a missing slot node is damage: avoid the slot, let go */
            printf("W%d : slot node missing: refuse the slot\n", w);
            giveup(w)
#endif
       fi }
  /* reserve.go: reserve -- waitPast(R) (or give up: the wait is too long, or
     the clock moved back past the deadline), then reservedUntil(now, R)
     and writeSlot: the fenced Multi */
  :: d_step { pc[w] == WAIT && aop[w] == NONE -> printf("W%d : wait too long: give up the slot\n", w); giveup(w) }
#if defined(M_NOWAIT) || defined(V_NOWAITONLY)
  :: atomic { pc[w] == WAIT && aop[w] == NONE -> PICK(0, MAXT); d_step {
#else
  :: atomic { pc[w] == WAIT && aop[w] == NONE && rf[w] < CHI -> PICK(MAX(rf[w] + 1, CLO), CHI); d_step {
#endif
#if defined(M_NOWAIT)
       gt_ = gt_ + H;
#else
       gt_ = MAX(gt_ + H, rf[w]);
#endif
#ifdef M_CREATE0
       if
       :: !zX && !attempted[w] -> printf("W%d : queue Multi(Check n%d, Create slot R=%d)\n", w, nseq[w], gt_);
            send(w, CREATEW, gt_)
       :: else -> printf("W%d : queue claim Multi(Check n%d, SetData R=%d)\n", w, nseq[w], gt_);
            send(w, CLAIMW, gt_)
       fi;
#elif defined(M_NOWAIT) || defined(V_NOWAITONLY)
       printf("W%d : no wait past R=%d; queue claim Multi(Check n%d, SetData R=%d)\n", w, rf[w], nseq[w], gt_);
       send(w, CLAIMW, gt_);
#else
       printf("W%d : clock passed R=%d; queue claim Multi(Check n%d, SetData R=%d)\n", w, rf[w], nseq[w], gt_);
       send(w, CLAIMW, gt_);
#endif
       attempted[w] = 1; gt_ = 0; pc[w] = CLAIMING } }
  /* reserve.go: reserve -- the answer of the claim write */
  :: d_step { pc[w] == CLAIMING && res[w] != NONE ->
       if
       :: res[w] == OK -> ceil[w] = sval[w]; attempted[w] = 0;
            printf("W%d : claim write OK\n", w); start_tenure(w); pc[w] = HOLD
       :: res[w] == GONE -> printf("W%d : claim write: lease node gone\n", w);
            forget(w); pc[w] = LIST
       :: else -> pc[w] = READ          /* conflict, unknown: read again */
       fi;
       res[w] = NONE; sval[w] = 0 }

  /* ---------------- hold ---------------- */
  /* snowflake/generator.go: reserve -- a new millisecond: clock reading in
     (last, ceiling]; or the same millisecond, next sequence (the clock at
     or up to MaxRollbackWait behind last; not from the floor state).
     The logical clock (--on-clock-back logical: logicalNext, the clock
     behind last) takes last+1 or the same millisecond's next sequence,
     never above the ceiling: both are among these moves, since a clock
     reading is any value, so the model covers it as it stands.
     The new millisecond's first sequence is 0 (--sequence-start zero);
     with -DSPREAD it is any of 0..MAXSEQ, which covers spreadStart's
     choice (--sequence-start spread). */
  :: atomic { holding[w] && glast[w] < MIN(GCEIL(w), MAXT) ->
       PICK(glast[w] + 1, MIN(GCEIL(w), MAXT));
       gk_ = 0;
#ifdef SPREAD
       do :: gk_ < MAXSEQ -> gk_++ :: break od;
#endif
       d_step { issue(w) } }
  :: d_step { holding[w] && !gflr[w] && gseq[w] < MAXSEQ ->
       gt_ = glast[w]; gk_ = gseq[w] + 1; issue(w) }
#ifdef M_LOGICALCEIL
  /* mutant: the logical clock takes the next millisecond without the
     ceiling check (logicalNext forgetting `ms > ceil`) */
  :: d_step { holding[w] && glast[w] < MAXT ->
       gt_ = glast[w] + 1; gk_ = 0; issue(w) }
#endif
  /* hold.go: runServing -- at a tick: SessionID changed (or Expired): lost */
  :: d_step { pc[w] == HOLD && !alive[w] ->
       printf("W%d : SessionID changed: lease lost, seal\n", w); lose(w, 0) }
  /* hold.go: renew -- target := reservedUntil(now, l.ceiling), writeSlot
     at l.version */
  :: atomic { pc[w] == HOLD && aop[w] == NONE && alive[w] ->
       PICK(CLO, CHI); d_step {
       gt_ = MAX(gt_ + H, ceil[w]);
       printf("W%d : queue renew Multi(Check n%d, SetData R=%d)\n", w, nseq[w], gt_);
       send(w, RENEW, gt_);
#ifdef M_EARLYCEIL
       gceil[w] = MAX(gceil[w], gt_);
#endif
       gt_ = 0; pc[w] = RENEWING } }
#ifndef NOSHORTEN
  /* hold.go: renew while a standby waits (standby.go) -- want :=
     reservedUntilH(now, l.floor, HS); above l.ceiling it is a plain renew
     with HS; below, the reservation is lowered: l.ceiling :=
     gen.LowerCeiling(want) = max(want, last issued), then writeSlot of it */
  :: atomic { pc[w] == HOLD && aop[w] == NONE && alive[w] ->
       PICK(CLO, CHI); d_step {
       gt_ = MAX(gt_ + HS, rf[w]);
       if
       :: gt_ >= ceil[w] ->
          printf("W%d : standby waits: queue renew Multi(Check n%d, SetData R=%d)\n", w, nseq[w], gt_);
          send(w, RENEW, gt_)
#ifdef M_WRITEFIRST
       :: else -> gt_ = MAX(gt_, glast[w]);
          printf("W%d : standby waits: shorten, WRITE FIRST: queue Multi(Check n%d, SetData R=%d), ceiling stays %d\n", w, nseq[w], gt_, ceil[w]);
          send(w, RENEW, gt_); lowering[w] = 1
#else
       :: else -> ceil[w] = MAX(gt_, glast[w]);
          printf("W%d : standby waits: shorten: gen.LowerCeiling -> ceiling %d; queue Multi(Check n%d, SetData R=%d)\n", w, ceil[w], nseq[w], ceil[w]);
          send(w, RENEW, ceil[w])
#endif
       fi;
       gt_ = 0; pc[w] = RENEWING } }
#endif
  :: d_step { pc[w] == RENEWING && res[w] != NONE && aop[w] == NONE ->
       if
       :: res[w] == OK && !lowering[w] -> ceil[w] = MAX(ceil[w], sval[w]); pc[w] = HOLD;   /* gen.SetCeiling: only up */
            printf("W%d : renew OK: ceiling := %d\n", w, ceil[w])
       :: res[w] == OK && lowering[w] -> ceil[w] = sval[w]; pc[w] = HOLD;   /* M_WRITEFIRST */
            printf("W%d : shortening confirmed: ceiling lowered to %d\n", w, ceil[w])
       :: res[w] == UNKN -> pc[w] = HOLD   /* serve up to the confirmed ceiling */
       :: res[w] == GONE -> printf("W%d : renew: lease node gone: lost, seal\n", w); lose(w, 0)
       :: res[w] == CONFL && zX && zH != 0 && zH == nseq[w] ->
            /* bad version, the slot still names us: adopt, write again */
            verc[w] = 1; ceil[w] = MAX(ceil[w], zR); pc[w] = HOLD;
            printf("W%d : renew conflict, slot names n%d: adopt, ceiling := %d\n", w, zH, ceil[w])
       :: res[w] == CONFL && !(zX && zH != 0 && zH == nseq[w]) ->
            printf("W%d : renew conflict: slot taken: lost, seal, delete n%d\n", w, nseq[w]); lose(w, 1)
       fi;
       res[w] = NONE; sval[w] = 0; lowering[w] = 0 }

  /* ---------------- release (ctx done at a tick) ---------------- */
  /* release.go: release -- gen.Seal(), then writeSlot(max(last, l.floor))
     at l.version, a second attempt after a conflict whose re-read still
     names us */
  :: d_step { pc[w] == HOLD && aop[w] == NONE ->
       holding[w] = 0;
       gt_ = RELVAL(w);
       printf("W%d : SIGTERM: seal; queue release Multi(Check n%d, SetData R=%d)\n", w, nseq[w], gt_);
       send(w, RELEASE, gt_); gt_ = 0; pc[w] = RELEASING }
  :: d_step { pc[w] == RELEASING && res[w] != NONE && aop[w] == NONE ->
       if
       :: res[w] == CONFL && !rat[w] && zX && zH != 0 && zH == nseq[w] ->
            verc[w] = 1; rat[w] = 1; gt_ = RELVAL(w);
            printf("W%d : release conflict, slot names n%d: write again\n", w, zH);
            send(w, RELEASE, gt_); gt_ = 0
       :: else ->
            /* deletePath(l.path), close the session, exit; a new process
               may start and claim again */
            printf("W%d : delete n%d, close session, exit; a new process starts\n", w, nseq[w]);
            res[w] = NONE; giveup(w)
       fi;
       res[w] = NONE }
  od
}

init {
  atomic {
    gi_ = 0;
    do
    :: gi_ < NW -> run Worker(gi_); gi_++
    :: else -> break
    od;
    gi_ = 0
  }
}

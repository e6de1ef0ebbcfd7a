/* plan_cache.c: a session's plans per input-shape set. A plan lives in a
 * graph (buffers, shapes, fused groups, chosen parameters), so each cached
 * plan is a graph of its own, read again from the model's file when a new
 * shape set arrives; the current one is the model's graph (m->g) with the
 * session's plan fields. When inputs come with shapes a cached plan was made
 * for, that plan is swapped in and nothing is planned. At most
 * KILN_PLAN_CACHE_MAX plans are kept; the least recently used one gives its
 * graph to the new plan (its device buffers are released first). Plans not
 * in use hold at most a quarter of the device's memory (trim), and their
 * graphs at most KILN_PLAN_CACHE_HOST_BYTES of weights on the host. */
#include "kiln_internal.h"

struct kiln_plan_entry {
  kiln_graph *g;
  bool planned, bind_floats;
  kiln_fusion_decision *fdec;
  int nfdec;
  int nodes_folded, blocked_values;
  uint64_t device_bytes, intermediate_bytes, pool_bytes;
  uint64_t used; /* LRU tick when it stopped being current */
};

/* Graphs kept beside the current one may hold this many bytes of weights on
 * the host together (a 1.7 GB model keeps one other plan, a 45 MB one seven). */
#define KILN_PLAN_CACHE_HOST_BYTES (2ull << 30)

#define SWAP(T, a, b) do { T t_ = (a); (a) = (b); (b) = t_; } while (0)

/* Exchanges the session's current plan with entry e. */
static void swap_in(kiln_session *s, struct kiln_plan_entry *e) {
  SWAP(kiln_graph *, s->m->g, e->g);
  SWAP(bool, s->planned, e->planned);
  SWAP(bool, s->bind_floats, e->bind_floats);
  SWAP(kiln_fusion_decision *, s->fdec, e->fdec);
  SWAP(int, s->nfdec, e->nfdec);
  SWAP(int, s->st.nodes_folded, e->nodes_folded);
  SWAP(int, s->st.blocked_values, e->blocked_values);
  SWAP(uint64_t, s->st.device_bytes, e->device_bytes);
  SWAP(uint64_t, s->st.intermediate_bytes, e->intermediate_bytes);
  SWAP(uint64_t, s->st.pool_bytes, e->pool_bytes);
  /* per-node profile of the last run belongs to the other graph */
  free(s->ev_lo);
  free(s->ev_hi);
  s->ev_lo = s->ev_hi = NULL;
}

/* Stashes the current plan and makes room for a new one: a fresh graph while
 * the cache has room, else the least recently used entry's graph. With
 * neither (a model from memory, no entries), the current graph is planned
 * again in place. */
static void make_room(kiln_session *s) {
  if (!s->planned) return;
  kiln_graph *fresh = NULL;
  kiln_error sub = {0};
  /* each graph holds the model's weights on the host too */
  uint64_t weights = 0;
  for (int i = 0; i < s->m->g->nvals; i++)
    if (s->m->g->vals[i].is_initializer) weights += kiln_value_bytes(&s->m->g->vals[i]);
  if (s->npc + 1 < KILN_PLAN_CACHE_MAX && (uint64_t)(s->npc + 1) * weights <= KILN_PLAN_CACHE_HOST_BYTES) {
    struct kiln_plan_entry *np = realloc(s->pc, sizeof *np * (size_t)(s->npc + 1));
    if (np) {
      s->pc = np;
      if (kiln__model_fresh_graph(s->m, &fresh, &sub) == 0) {
        struct kiln_plan_entry *e = &s->pc[s->npc++];
        memset(e, 0, sizeof *e);
        e->g = fresh;
        fresh->dev_opt = s->m->g->dev_opt; /* the same device options (gemm kernels) */
        swap_in(s, e);
        e->used = ++s->pc_tick;
        return;
      }
    }
  }
  if (s->npc == 0) return;
  int lru = 0;
  for (int i = 1; i < s->npc; i++)
    if (s->pc[i].used < s->pc[lru].used) lru = i;
  swap_in(s, &s->pc[lru]);
  s->pc[lru].used = ++s->pc_tick;
  kiln__session_release_plan(s); /* the evicted plan's buffers */
}

/* Drops entry i: its device buffers, its graph. */
static void drop(kiln_session *s, int i) {
  swap_in(s, &s->pc[i]);
  kiln__session_release_plan(s);
  swap_in(s, &s->pc[i]);
  kiln_graph_free(s->pc[i].g);
  memmove(&s->pc[i], &s->pc[i + 1], sizeof *s->pc * (size_t)(s->npc - i - 1));
  s->npc--;
}

/* Plans not in use keep their weights and buffers on the device (each plan
 * has its own copy of the weights); they may hold at most a quarter of the
 * device's memory together, the least recently used are dropped beyond. */
static void trim(kiln_session *s) {
  uint64_t cap = s->d->info.global_mem / 4;
  for (;;) {
    uint64_t held = 0;
    int lru = -1;
    for (int i = 0; i < s->npc; i++) {
      held += s->pc[i].device_bytes;
      if (s->pc[i].planned && (lru < 0 || s->pc[i].used < s->pc[lru].used)) lru = i;
    }
    if (held <= cap || lru < 0) return;
    drop(s, lru);
  }
}

int kiln__plan_cache_ensure(kiln_session *s, bool (*matches)(kiln_session *), int (*plan)(kiln_session *, kiln_error *), kiln_error *err) {
  if (matches(s)) return 0;
  for (int i = 0; i < s->npc; i++) {
    swap_in(s, &s->pc[i]);
    if (matches(s)) {
      s->pc[i].used = ++s->pc_tick; /* the plan that was current */
      return 0;
    }
    swap_in(s, &s->pc[i]);
  }
  make_room(s);
  int rc = plan(s, err);
  if (!rc) s->plans_built++;
  trim(s);
  return rc;
}

void kiln__plan_cache_clear(kiln_session *s) {
  while (s->npc > 0) drop(s, s->npc - 1);
  free(s->pc);
  s->pc = NULL;
  s->npc = 0;
}

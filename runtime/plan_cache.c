/* plan_cache.c: a session's plans per input-shape set. A plan lives in a
 * graph (buffers, shapes, fused groups, chosen parameters), so each cached
 * plan is a graph of its own, read again from the model's file when a new
 * shape set arrives; the current one is the model's graph (m->g) with the
 * session's plan fields. When inputs come with shapes a cached plan was made
 * for, that plan is swapped in and nothing is planned. At most
 * KILN_PLAN_CACHE_MAX plans are kept; the least recently used one gives its
 * graph to the new plan (its device buffers are released first). */
#include "kiln_internal.h"

struct kiln_plan_entry {
  kiln_graph *g;
  bool planned, bind_floats;
  kiln_fusion_decision *fdec;
  int nfdec;
  int nodes_folded;
  uint64_t device_bytes, intermediate_bytes, pool_bytes;
  uint64_t used; /* LRU tick when it stopped being current */
};

#define SWAP(T, a, b) do { T t_ = (a); (a) = (b); (b) = t_; } while (0)

/* Exchanges the session's current plan with entry e. */
static void swap_in(kiln_session *s, struct kiln_plan_entry *e) {
  SWAP(kiln_graph *, s->m->g, e->g);
  SWAP(bool, s->planned, e->planned);
  SWAP(bool, s->bind_floats, e->bind_floats);
  SWAP(kiln_fusion_decision *, s->fdec, e->fdec);
  SWAP(int, s->nfdec, e->nfdec);
  SWAP(int, s->st.nodes_folded, e->nodes_folded);
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
  if (s->npc + 1 < KILN_PLAN_CACHE_MAX) {
    struct kiln_plan_entry *np = realloc(s->pc, sizeof *np * (size_t)(s->npc + 1));
    if (np) {
      s->pc = np;
      if (kiln__model_fresh_graph(s->m, &fresh, &sub) == 0) {
        struct kiln_plan_entry *e = &s->pc[s->npc++];
        memset(e, 0, sizeof *e);
        e->g = fresh;
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
  return rc;
}

void kiln__plan_cache_clear(kiln_session *s) {
  for (int i = 0; i < s->npc; i++) {
    swap_in(s, &s->pc[i]);
    kiln__session_release_plan(s);
    swap_in(s, &s->pc[i]);
    kiln_graph_free(s->pc[i].g);
  }
  free(s->pc);
  s->pc = NULL;
  s->npc = 0;
}

/* Optimizers (AdamW, LAMB), learning-rate schedules and global-norm
 * gradient clipping over the parameter table. */
#ifndef CADRE_OPTIM_H
#define CADRE_OPTIM_H

#include <stdint.h>

#include "model.h"

enum optim_kind { OPTIM_ADAMW = 0, OPTIM_LAMB = 1 };
enum lr_schedule { SCHED_CONSTANT = 0, SCHED_LINEAR = 1, SCHED_POLY = 2 };

struct optim {
	enum optim_kind	 kind;
	float		 lr, beta1, beta2, eps, weight_decay;
	enum lr_schedule schedule;
	int64_t		 warmup;	/* steps */
	int64_t		 total;		/* steps, for the decay */
	float		 power;		/* polynomial decay power */
	float		 clip;		/* global gradient norm bound; 0: none */
	int64_t		 t;		/* steps taken */
	float		*m, *v;		/* moments, the parameters' layout */
};

void optim_init(struct optim *o, const struct bert_model *m);
void optim_free(struct optim *o);
/* The learning rate of step s (0-based): see docs/trainer.md. */
float optim_lr(const struct optim *o, int64_t s);
/* L2 norm of x[0..n), summed in double over fixed chunks: the same bits
 * whatever the thread count. */
double vec_norm(const float *x, size_t n);
/* Clips the gradients (when o->clip > 0) and takes one step with the
 * learning rate of step o->t; returns the gradient norm before clipping. */
double optim_step(struct optim *o, struct bert_model *m);

#endif

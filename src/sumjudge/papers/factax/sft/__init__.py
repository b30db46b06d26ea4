"""FacTax's supervised distillation: training pairs, fine-tuning, inference with the tuned model."""

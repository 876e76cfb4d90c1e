"""The review layer between the analysis and the reports: kernel groups, verdicts, advice.

Every report format reads this layer, so no renderer computes its own verdict
(DESIGN.md, "Between the models and the reports").
"""
